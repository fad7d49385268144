// Usage over time, from the metrics the gateway already exports. Two sources, one shape (points of
// cumulative counters summed over every gateway replica; the page draws their increase between
// points):
//
// - Prometheus, when one is configured (prometheus-usage.ts): the last hour as Prometheus holds it,
//   summed over the replicas it scrapes;
// - otherwise the console reads every replica's /metrics itself (on demand, at most every few
//   seconds, and every 15 s in the background), sums them, and keeps one point per read for the
//   last hour in memory. The replicas are the gateway Service's EndpointSlices' endpoints in a
//   cluster (gateway-replicas.ts), or the URLs given (standalone mode's one gateway).
//
// Every read goes through the shared outbound policy (timeout, bounded retries with jitter, the
// console's capstan_console_outbound_* metrics). Nothing here holds a key or a token.
import type { OutboundMetrics } from "@capstan/shared";
import { OutboundPolicy } from "@capstan/shared/resilience";
import { parsePrometheusText, type Sample, USAGE_METRICS } from "./usage-metrics.ts";

export interface ChannelPoint {
  requests: number;
  throttled: number;
  tokens: number;
}

export interface UsagePoint {
  at: number;
  /** Cumulative counters per channel id (namespace/name). */
  channels: Record<string, ChannelPoint>;
  latencySum: number;
  latencyCount: number;
}

export interface UsageReading {
  points: UsagePoint[];
  /** Why some of the numbers may be missing (a replica that did not answer), in words. */
  warning?: string;
}

/** Where the usage page's numbers come from. */
export interface UsageSource {
  /** Where the numbers come from, in words (for errors). */
  readonly describe: string;
  /** The last hour's points of the channels of `namespace` (others may be included). */
  read(namespace: string): Promise<UsageReading>;
  close(): void;
}

const KEEP_MS = 3_600_000;
const FRESH_MS = 3_000;

/** An HTTP answer that is not 200, as the outbound policy classifies failures (`status`). */
export class HttpStatusError extends Error {
  readonly status: number;
  constructor(url: string, status: number, detail?: string) {
    super(`${url}: HTTP ${status}${detail ? `: ${detail}` : ""}`);
    this.status = status;
  }
}

export function pointFrom(samples: Sample[], at: number): UsagePoint {
  const channels: Record<string, ChannelPoint> = {};
  const of = (id: string) => {
    channels[id] ??= { requests: 0, throttled: 0, tokens: 0 };
    return channels[id];
  };
  let latencySum = 0;
  let latencyCount = 0;
  for (const s of samples) {
    const id = s.labels.channel;
    if (s.name === USAGE_METRICS.requests && id) {
      of(id).requests += s.value;
      if (s.labels.status === "429") of(id).throttled += s.value;
    } else if (s.name === USAGE_METRICS.tokens && id) of(id).tokens += s.value;
    else if (s.name === USAGE_METRICS.latencySum) latencySum += s.value;
    else if (s.name === USAGE_METRICS.latencyCount) latencyCount += s.value;
  }
  return { at, channels, latencySum, latencyCount };
}

/** The console's reads of the replicas' /metrics (one policy per process: one metric series). */
export function replicaPolicy(metrics: OutboundMetrics | undefined): OutboundPolicy {
  return new OutboundPolicy({ target: "gateway_metrics", timeoutMs: 5_000, maxAttempts: 2, baseDelayMs: 200, metrics });
}

/** Reads every replica's /metrics itself and keeps the last hour of summed points in memory. */
export class UsageRecorder implements UsageSource {
  readonly points: UsagePoint[] = [];
  readonly describe: string;
  private readonly targets: () => Promise<string[]>;
  private readonly policy: OutboundPolicy;
  private readonly timer: NodeJS.Timeout;
  private inflight: Promise<void> | undefined;
  lastError: string | undefined;

  /** `targets`: the replicas' metrics URLs now (asked before every read: replicas come and go). */
  constructor(targets: () => Promise<string[]>, opts: { describe: string; policy: OutboundPolicy; everyMs?: number }) {
    this.targets = targets;
    this.describe = opts.describe;
    this.policy = opts.policy;
    this.timer = setInterval(() => void this.refresh(true), opts.everyMs ?? 15_000);
    this.timer.unref();
  }

  async read(): Promise<UsageReading> {
    await this.refresh();
    return { points: this.points, ...(this.lastError ? { warning: this.lastError } : {}) };
  }

  /** Reads the gateways now unless the last read is fresh (force: read anyway). */
  refresh(force = false): Promise<void> {
    const last = this.points.at(-1);
    if (!force && last && Date.now() - last.at < FRESH_MS) return Promise.resolve();
    this.inflight ??= this.readAll().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  private async readAll(): Promise<void> {
    const samples: Sample[] = [];
    const errors: string[] = [];
    let urls: string[] = [];
    try {
      urls = await this.targets();
      if (urls.length === 0) errors.push(`no gateway replica found in ${this.describe}`);
    } catch (err) {
      errors.push(`${this.describe} could not be read: ${(err as Error).message}`);
    }
    await Promise.all(
      urls.map(async (url) => {
        try {
          const text = await this.policy.execute(async ({ signal }) => {
            const res = await fetch(url, { signal });
            if (!res.ok) throw new HttpStatusError(url, res.status);
            return res.text();
          });
          samples.push(...parsePrometheusText(text));
        } catch (err) {
          errors.push(`${url}: ${(err as Error).message}`);
        }
      }),
    );
    this.lastError = errors.length ? `some gateway metrics could not be read: ${errors.join("; ")}` : undefined;
    const now = Date.now();
    this.points.push(pointFrom(samples, now));
    while (this.points.length && (this.points[0] as UsagePoint).at < now - KEEP_MS) this.points.shift();
  }

  close(): void {
    clearInterval(this.timer);
  }
}
