// The test ground's trace receiver: an OpenTelemetry Collector with only the OTLP receiver and the
// file exporter (test/kube-bin/otelcol, built by scripts/setup.d/60-otelcol.sh into the binary
// cache, or here on first use), one per test file on a free loopback port. Processes under test
// export to `otlpEndpoint` through the standard OTEL_* variables; the collector writes each export
// request as a line of OTLP JSON, and `trace(id)` / `traces(service, operation)` read the spans
// back grouped into traces, in the shape Jaeger's query API uses (spans with `references` and
// `tags`, one process entry per service), which `spanTree()` prints.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./ports.ts";
import { startProcess, waitFor } from "./process.ts";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * The cached binary: the setup step reuses it when it reports the pinned version (0.2 s) and
 * builds it otherwise (a few minutes the first time); its last line of output is the path.
 */
export function otelcolBinary(): string {
  if (process.env.CAPSTAN_OTELCOL) return process.env.CAPSTAN_OTELCOL;
  const out = execFileSync("bash", [join(repoRoot, "scripts/setup.d/60-otelcol.sh")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  return out.trim().split("\n").at(-1) as string;
}

/** One span (the fields the tests read). */
export interface TraceSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  /** Microseconds. */
  duration: number;
  startTime: number;
  /** The parent, as `{refType: "CHILD_OF", spanID}`; empty for a root. */
  references: { refType: string; traceID: string; spanID: string }[];
  /** The span's attributes, and `span.kind` (server, client, internal, ...). */
  tags: { key: string; value: unknown }[];
  processID: string;
}

export interface Trace {
  traceID: string;
  spans: TraceSpan[];
  /** One entry per service: its name and its resource's attributes (`tags`, as Jaeger shows them). */
  processes: Record<string, { serviceName: string; tags: { key: string; value: unknown }[] }>;
}

export interface TraceReceiver {
  /** OTLP/HTTP base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  otlpEndpoint: string;
  /** The file the collector writes. */
  file: string;
  /** The trace with this id, or undefined while none of its spans arrived. */
  trace(traceId: string): Promise<Trace | undefined>;
  /** Traces with a span of this service (most recent first, at most 50), optionally of one operation. */
  traces(service: string, operation?: string): Promise<Trace[]>;
  stop(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: OtlpAttribute[];
}
interface OtlpExport {
  resourceSpans?: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

const KINDS = ["unspecified", "internal", "server", "client", "producer", "consumer"];

function attributeValue(v: OtlpValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(attributeValue);
  return undefined;
}

interface ReadSpan {
  span: TraceSpan;
  service: string;
  resource: { key: string; value: unknown }[];
}

/** Every span exported so far, with its service name and resource attributes. */
function readSpans(file: string): ReadSpan[] {
  if (!existsSync(file)) return [];
  const out: ReadSpan[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.trim()) continue;
    for (const rs of (JSON.parse(line) as OtlpExport).resourceSpans ?? []) {
      const resource = (rs.resource?.attributes ?? []).map((a) => ({ key: a.key, value: attributeValue(a.value) }));
      const service = String(resource.find((a) => a.key === "service.name")?.value);
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          const start = BigInt(s.startTimeUnixNano);
          const tags = (s.attributes ?? []).map((a) => ({ key: a.key, value: attributeValue(a.value) }));
          tags.push({ key: "span.kind", value: KINDS[s.kind ?? 0] ?? "unspecified" });
          out.push({
            service,
            resource,
            span: {
              traceID: s.traceId,
              spanID: s.spanId,
              operationName: s.name,
              startTime: Number(start / 1000n),
              duration: Number((BigInt(s.endTimeUnixNano) - start) / 1000n),
              references: s.parentSpanId ? [{ refType: "CHILD_OF", traceID: s.traceId, spanID: s.parentSpanId }] : [],
              tags,
              processID: "",
            },
          });
        }
      }
    }
  }
  return out;
}

/** Groups spans into traces, one process entry per service. */
function group(spans: ReadSpan[]): Map<string, Trace> {
  const traces = new Map<string, Trace>();
  for (const { span, service, resource } of spans) {
    const t = traces.get(span.traceID) ?? { traceID: span.traceID, spans: [], processes: {} };
    traces.set(span.traceID, t);
    let pid = Object.keys(t.processes).find((k) => t.processes[k]?.serviceName === service);
    if (!pid) {
      pid = `p${Object.keys(t.processes).length + 1}`;
      t.processes[pid] = { serviceName: service, tags: resource };
    }
    t.spans.push({ ...span, processID: pid });
  }
  return traces;
}

export async function startTraceReceiver(): Promise<TraceReceiver> {
  const dir = mkdtempSync(join(tmpdir(), "capstan-otelcol-"));
  const port = await freePort();
  const file = join(dir, "traces.jsonl");
  writeFileSync(
    join(dir, "config.yaml"),
    `
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${port}
exporters:
  file:
    path: ${file}
    format: json
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
`,
  );
  const proc = startProcess("otelcol", otelcolBinary(), ["--config", join(dir, "config.yaml")], {
    PATH: process.env.PATH,
  });
  const otlpEndpoint = `http://127.0.0.1:${port}`;
  await waitFor(
    "otelcol OTLP receiver",
    async () =>
      (
        await fetch(`${otlpEndpoint}/v1/traces`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{}",
        })
      ).ok,
    { timeoutMs: 60_000, proc },
  );
  return {
    otlpEndpoint,
    file,
    trace: async (traceId) => group(readSpans(file)).get(traceId),
    traces: async (service, operation) => {
      const all = [...group(readSpans(file)).values()].filter((t) =>
        t.spans.some(
          (s) => t.processes[s.processID]?.serviceName === service && (!operation || s.operationName === operation),
        ),
      );
      const latest = (t: Trace) => Math.max(...t.spans.map((s) => s.startTime));
      return all.sort((a, b) => latest(b) - latest(a)).slice(0, 50);
    },
    stop: async () => {
      await proc.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The spans of a trace as a tree, one line per span ("service: name (ms)"), for messages and docs. */
export function spanTree(t: Trace): string {
  const children = new Map<string, TraceSpan[]>();
  const ids = new Set(t.spans.map((s) => s.spanID));
  const roots: TraceSpan[] = [];
  for (const s of [...t.spans].sort((a, b) => a.startTime - b.startTime)) {
    const parent = s.references.find((r) => r.refType === "CHILD_OF" && ids.has(r.spanID))?.spanID;
    if (parent) children.set(parent, [...(children.get(parent) ?? []), s]);
    else roots.push(s);
  }
  const lines: string[] = [];
  const walk = (s: TraceSpan, depth: number) => {
    const service = t.processes[s.processID]?.serviceName ?? "?";
    lines.push(`${"  ".repeat(depth)}${service}: ${s.operationName} (${(s.duration / 1000).toFixed(1)} ms)`);
    for (const c of children.get(s.spanID) ?? []) walk(c, depth + 1);
  };
  for (const r of roots) walk(r, 0);
  return lines.join("\n");
}

/** A span's attribute (or `span.kind`). */
export const tagOf = (s: TraceSpan, key: string): unknown => s.tags.find((t) => t.key === key)?.value;

/** The span's parent's id, or undefined for a root. */
export const parentOf = (s: TraceSpan): string | undefined =>
  s.references.find((r) => r.refType === "CHILD_OF")?.spanID;

/**
 * Polls the receiver until the trace holds every span named (spans arrive per process, in
 * batches); fails with the tree received so far.
 */
export async function traceWith(receiver: TraceReceiver, traceId: string, names: string[]): Promise<Trace> {
  let last: Trace | undefined;
  await waitFor(
    `trace ${traceId} with ${names.join(", ")}`,
    async () => {
      last = await receiver.trace(traceId);
      const have = new Set(last?.spans.map((s) => s.operationName));
      return names.every((n) => have.has(n));
    },
    { timeoutMs: 30_000 },
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${last ? spanTree(last) : "(no trace)"}`);
  });
  return last as Trace;
}
