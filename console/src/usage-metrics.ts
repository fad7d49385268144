// The gateway metrics the usage page reads, named in one place (docs/observability.md lists them).
// Channel ids are `namespace/name` in the `channel` label.
export const USAGE_METRICS = {
  /** Chat completions per channel, by status (429s are status="429"). */
  requests: "capstan_gateway_channel_requests_total",
  /** Tokens per channel, by kind (prompt, completion). */
  tokens: "capstan_gateway_tokens_total",
  /** Request latency of all channels (the gateway has no per-channel histogram). */
  latencySum: "capstan_gateway_chat_request_duration_seconds_sum",
  latencyCount: "capstan_gateway_chat_request_duration_seconds_count",
} as const;

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of Prometheus text exposition format (comments and blank lines skipped). */
export function parsePrometheusText(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    }
    out.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return out;
}
