// What the operator reads from the gateway's internal API (its Service's internal port) to put in
// status: an AccessChannel's budget spend (shared in Redis, so any replica answers for all) and an
// Agent's upstream breakers (each replica holds its own; the replica that answers speaks for
// itself). Through the shared outbound policy: timeout, bounded retries with jitter, metrics. A
// gateway that does not answer, or answers what its wire schema (@capstan/shared/api usage.ts)
// does not take, leaves status as it was.
import type { OutboundMetrics } from "@capstan/shared";
import { type BudgetSpend, budgetAnswerSchema, type UpstreamState, upstreamsAnswerSchema } from "@capstan/shared/api";
import { OutboundPolicy } from "@capstan/shared/resilience";
import type { z } from "zod";

/**
 * What status takes of a channel's budget spend and of an Agent's upstream breaker: the gateway's
 * wire shapes, less the id the operator asked by.
 */
export type BudgetReading = Omit<BudgetSpend, "channel">;
export type UpstreamReading = Omit<UpstreamState, "agent">;

export interface GatewayUsage {
  /** The channel's spend, or undefined when the gateway cannot say (not reachable, no Redis). */
  budget(channelId: string): Promise<BudgetReading | undefined>;
  upstreams(agentId: string): Promise<UpstreamReading[] | undefined>;
}

export class HttpGatewayUsage implements GatewayUsage {
  private readonly url: () => string;
  private readonly policy: OutboundPolicy;

  constructor(url: () => string, metrics?: OutboundMetrics) {
    this.url = url;
    this.policy = new OutboundPolicy({
      target: "gateway",
      timeoutMs: 5_000,
      maxAttempts: 2,
      baseDelayMs: 200,
      metrics,
    });
  }

  /** The answer at `path` as `schema` parses it; undefined when there is none or it does not fit. */
  private async get<S extends z.ZodType>(path: string, schema: S): Promise<z.output<S> | undefined> {
    let json: unknown;
    try {
      json = await this.policy.execute(async ({ signal }) => {
        const res = await fetch(`${this.url()}${path}`, { signal });
        if (!res.ok) {
          await res.arrayBuffer();
          throw Object.assign(new Error(`gateway answered HTTP ${res.status}`), { status: res.status });
        }
        return res.json();
      });
    } catch {
      return undefined;
    }
    const parsed = schema.safeParse(json);
    return parsed.success ? parsed.data : undefined;
  }

  async budget(channelId: string): Promise<BudgetReading | undefined> {
    const r = await this.get(`/internal/v1/budget?channel=${encodeURIComponent(channelId)}`, budgetAnswerSchema);
    return r?.budget ?? undefined;
  }

  async upstreams(agentId: string): Promise<UpstreamReading[] | undefined> {
    const r = await this.get(`/internal/v1/upstreams?agent=${encodeURIComponent(agentId)}`, upstreamsAnswerSchema);
    return r?.upstreams;
  }
}
