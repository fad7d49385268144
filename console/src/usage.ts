// Usage over time, from the metrics the gateway already exports: the console reads every gateway
// replica's /metrics (on demand, at most every few seconds, and every 15 s in the background),
// sums the replicas, and keeps one point per read for the last hour in memory. Counters are
// cumulative; the page draws their increase between points. Nothing here holds a key or a token.
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

const KEEP_MS = 3_600_000;
const FRESH_MS = 3_000;

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

export class UsageRecorder {
  readonly points: UsagePoint[] = [];
  private readonly urls: string[];
  private readonly timer: NodeJS.Timeout | undefined;
  private inflight: Promise<void> | undefined;
  lastError: string | undefined;

  constructor(urls: string[], everyMs = 15_000) {
    this.urls = urls;
    this.timer = urls.length ? setInterval(() => void this.refresh(true), everyMs) : undefined;
    this.timer?.unref();
  }

  get configured(): boolean {
    return this.urls.length > 0;
  }

  /** Reads the gateways now unless the last read is fresh (force: read anyway). */
  refresh(force = false): Promise<void> {
    const last = this.points.at(-1);
    if (!force && last && Date.now() - last.at < FRESH_MS) return Promise.resolve();
    this.inflight ??= this.read().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  private async read(): Promise<void> {
    const samples: Sample[] = [];
    const errors: string[] = [];
    await Promise.all(
      this.urls.map(async (url) => {
        try {
          const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
          if (!res.ok) throw new Error(`HTTP ${res.status}`);
          samples.push(...parsePrometheusText(await res.text()));
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
    if (this.timer) clearInterval(this.timer);
  }
}
