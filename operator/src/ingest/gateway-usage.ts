// What the operator reads from the gateway's internal API (its Service's internal port) to put in
// status: an AccessChannel's budget spend (shared in Redis, so any replica answers for all) and an
// Agent's upstream breakers (each replica holds its own; the replica that answers speaks for
// itself). Through the shared outbound policy: timeout, bounded retries with jitter, metrics. A
// gateway that does not answer leaves status as it was.
import type { OutboundMetrics } from "@capstan/shared";
import { OutboundPolicy } from "@capstan/shared/resilience";

export interface BudgetReading {
  period: string;
  spent: number;
  tokens: number;
  resetsAt: string;
}

export interface UpstreamReading {
  upstream: string;
  model: string;
  circuit: "closed" | "open" | "half_open";
  since: string;
}

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

  private async get<T>(path: string): Promise<T | undefined> {
    try {
      return await this.policy.execute(async ({ signal }) => {
        const res = await fetch(`${this.url()}${path}`, { signal });
        if (!res.ok) {
          await res.arrayBuffer();
          throw Object.assign(new Error(`gateway answered HTTP ${res.status}`), { status: res.status });
        }
        return (await res.json()) as T;
      });
    } catch {
      return undefined;
    }
  }

  async budget(channelId: string): Promise<BudgetReading | undefined> {
    const r = await this.get<{ budget: BudgetReading | null }>(
      `/internal/v1/budget?channel=${encodeURIComponent(channelId)}`,
    );
    return r?.budget ?? undefined;
  }

  async upstreams(agentId: string): Promise<UpstreamReading[] | undefined> {
    const r = await this.get<{ upstreams: UpstreamReading[] }>(
      `/internal/v1/upstreams?agent=${encodeURIComponent(agentId)}`,
    );
    return r?.upstreams;
  }
}
