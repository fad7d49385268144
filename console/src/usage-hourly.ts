// Hourly usage that survives gateway restarts: the gateway keeps tokens and requests per channel,
// agent, upstream and model and hour in Redis and serves them on its internal port
// (/internal/v1/usage, with a cost where the Agent prices the model). Every replica answers for
// all (Redis is shared), so the first replica that answers is enough; the replicas are the ones
// the usage page already reads (usage-source.ts). Through the shared outbound policy. The answer is
// parsed with the wire schema the gateway serialises it with (@capstan/shared/api usage.ts).
import { type UsageRow, usageAnswerSchema } from "@capstan/shared/api";
import type { OutboundPolicy } from "@capstan/shared/resilience";
import { HttpStatusError } from "./usage.ts";

export type HourlyRow = UsageRow;

export class HourlyUsage {
  private readonly metricsUrls: () => Promise<string[]>;
  private readonly policy: OutboundPolicy;

  /** `metricsUrls`: the replicas' /metrics URLs; the usage API is beside it on the same port. */
  constructor(metricsUrls: () => Promise<string[]>, policy: OutboundPolicy) {
    this.metricsUrls = metricsUrls;
    this.policy = policy;
  }

  async read(namespace: string, hours: number): Promise<HourlyRow[]> {
    const urls = await this.metricsUrls();
    let last: unknown = new Error("no gateway replica found");
    for (const metrics of urls) {
      const url = `${metrics.replace(/\/metrics$/, "")}/internal/v1/usage?namespace=${encodeURIComponent(namespace)}&hours=${hours}`;
      try {
        return await this.policy.execute(async ({ signal }) => {
          const res = await fetch(url, { signal });
          if (!res.ok) throw new HttpStatusError(url, res.status, (await res.text()).slice(0, 200));
          const answer = usageAnswerSchema.safeParse(await res.json());
          if (!answer.success) throw new Error(`${url}: not a usage answer: ${answer.error.issues[0]?.message}`);
          return answer.data.usage;
        });
      } catch (err) {
        last = err;
      }
    }
    throw last;
  }
}
