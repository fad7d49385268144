// The usage page's numbers from Prometheus (CAPSTAN_CONSOLE_PROMETHEUS_URL): the gateway's own
// counters over the last hour (query_range), summed over every replica Prometheus scrapes, which
// `selector` picks out (the chart gives `job="capstan-gateway",namespace="<release namespace>"`).
// Only the namespace's channels are asked for; the route keeps those the user may list. The same
// points as the console's own reads (usage.ts): cumulative counters, the page draws increases.
import type { OutboundPolicy } from "@capstan/shared/resilience";
import { type ChannelPoint, HttpStatusError, type UsagePoint, type UsageReading, type UsageSource } from "./usage.ts";
import { USAGE_METRICS } from "./usage-metrics.ts";

interface Matrix {
  metric: Record<string, string>;
  values: [number, string][];
}

/** A regex that matches `s` literally (PromQL's RE2 syntax). */
function literal(s: string): string {
  return s.replace(/[\\.^$|?*+()[\]{}]/g, "\\$&");
}

export class PrometheusUsage implements UsageSource {
  readonly describe: string;
  private readonly url: string;
  private readonly selector: string;
  private readonly policy: OutboundPolicy;
  private readonly stepSeconds: number;

  constructor(opts: { url: string; selector: string; policy: OutboundPolicy; stepSeconds?: number }) {
    this.url = opts.url.replace(/\/+$/, "");
    this.selector = opts.selector.trim();
    this.policy = opts.policy;
    this.stepSeconds = opts.stepSeconds ?? 15;
    this.describe = `Prometheus at ${this.url}`;
  }

  async read(namespace: string): Promise<UsageReading> {
    const step = this.stepSeconds;
    const end = Math.ceil(Date.now() / 1000 / step) * step;
    const range = { start: end - 3600, end, step };
    const sel = (...extra: string[]) =>
      `{${[this.selector, `channel=~"${literal(namespace)}/.*"`, ...extra].filter(Boolean).join(",")}}`;
    const all = `{${this.selector}}`;
    const [requests, throttled, tokens, latencySum, latencyCount] = await Promise.all([
      this.range(`sum by (channel) (${USAGE_METRICS.requests}${sel()})`, range),
      this.range(`sum by (channel) (${USAGE_METRICS.requests}${sel('status="429"')})`, range),
      this.range(`sum by (channel) (${USAGE_METRICS.tokens}${sel()})`, range),
      this.range(`sum(${USAGE_METRICS.latencySum}${all})`, range),
      this.range(`sum(${USAGE_METRICS.latencyCount}${all})`, range),
    ]);
    const points = new Map<number, UsagePoint>();
    const at = (t: number) => {
      let p = points.get(t);
      if (!p) {
        p = { at: t * 1000, channels: {}, latencySum: 0, latencyCount: 0 };
        points.set(t, p);
      }
      return p;
    };
    const perChannel = (series: Matrix[], field: keyof ChannelPoint) => {
      for (const s of series) {
        const id = s.metric.channel;
        if (!id) continue;
        for (const [t, v] of s.values) {
          const channels = at(t).channels;
          channels[id] ??= { requests: 0, throttled: 0, tokens: 0 };
          channels[id][field] = Number(v);
        }
      }
    };
    perChannel(requests, "requests");
    perChannel(throttled, "throttled");
    perChannel(tokens, "tokens");
    for (const [t, v] of latencySum[0]?.values ?? []) at(t).latencySum = Number(v);
    for (const [t, v] of latencyCount[0]?.values ?? []) at(t).latencyCount = Number(v);
    return { points: [...points.values()].sort((a, b) => a.at - b.at) };
  }

  private range(query: string, r: { start: number; end: number; step: number }): Promise<Matrix[]> {
    return this.policy.execute(async ({ signal }) => {
      const url = `${this.url}/api/v1/query_range`;
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ query, start: String(r.start), end: String(r.end), step: String(r.step) }),
        signal,
      });
      const body = (await res.json().catch(() => ({}))) as {
        status?: string;
        error?: string;
        data?: { result?: Matrix[] };
      };
      // A bad query is answered 400 or 422 with Prometheus's reason (not retried: it would not change).
      if (!res.ok) throw new HttpStatusError(url, res.status, body.error);
      if (body.status !== "success") throw new Error(`Prometheus answered ${body.status}: ${body.error}`);
      return body.data?.result ?? [];
    });
  }

  close(): void {}
}
