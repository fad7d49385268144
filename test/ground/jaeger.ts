// A real trace receiver for tests: Jaeger v2 (built by scripts/setup.d/60-jaeger.sh into the
// binary cache, or here on first use) with its OTLP/HTTP receiver and query API on free loopback
// ports and in-memory storage. Processes under test export to `otlpEndpoint` through the standard
// OTEL_* variables; the test reads whole traces back with `trace(id)` (Jaeger's /api/traces).
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { binaryCacheDir } from "./kube.ts";
import { freePort } from "./ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "./process.ts";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The cached binary (setup.d/60-jaeger.sh builds it when missing: long the first time). */
export function jaegerBinary(): string {
  if (process.env.JAEGER_BIN) return process.env.JAEGER_BIN;
  const mod = readFileSync(join(repoRoot, "test/kube-bin/jaeger/go.mod"), "utf8");
  const version = /github\.com\/jaegertracing\/jaeger (v\S+)/.exec(mod)?.[1];
  const bin = join(binaryCacheDir(), "jaeger", version ?? "unknown", "jaeger");
  if (!existsSync(bin)) execFileSync("bash", [join(repoRoot, "scripts/setup.d/60-jaeger.sh")], { stdio: "inherit" });
  return bin;
}

/** One span as Jaeger's query API returns it (the fields the tests read). */
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  /** Microseconds. */
  duration: number;
  startTime: number;
  references: { refType: string; traceID: string; spanID: string }[];
  tags: { key: string; value: unknown }[];
  processID: string;
}

export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string }>;
}

export interface JaegerServer {
  /** OTLP/HTTP base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  otlpEndpoint: string;
  /** Jaeger query API base URL. */
  queryUrl: string;
  /** The trace with this id, or undefined while Jaeger has none. */
  trace(traceId: string): Promise<JaegerTrace | undefined>;
  /** Traces of a service (most recent first), optionally of one operation. */
  traces(service: string, operation?: string): Promise<JaegerTrace[]>;
  stop(): Promise<void>;
}

function config(otlpPort: number, httpPort: number, grpcPort: number): string {
  // Only what the tests use: no Jaeger/Zipkin receivers, sampling or health extensions, and the
  // collector's own metrics off (they would claim fixed ports shared runs collide on).
  return `
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memory_store:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: memory_store
    http:
      endpoint: 127.0.0.1:${httpPort}
    grpc:
      endpoint: 127.0.0.1:${grpcPort}
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${otlpPort}
exporters:
  jaeger_storage_exporter:
    trace_storage: memory_store
`;
}

export async function startJaeger(): Promise<JaegerServer> {
  const bin = jaegerBinary();
  const dir = mkdtempSync(join(tmpdir(), "capstan-jaeger-"));
  const [otlpPort, httpPort, grpcPort] = [await freePort(), await freePort(), await freePort()];
  writeFileSync(join(dir, "config.yaml"), config(otlpPort, httpPort, grpcPort));
  const proc: ManagedProcess = startProcess("jaeger", bin, ["--config", join(dir, "config.yaml")], {
    PATH: process.env.PATH,
  });
  const queryUrl = `http://127.0.0.1:${httpPort}`;
  const get = async <T>(path: string): Promise<T | undefined> => {
    const res = await fetch(`${queryUrl}${path}`, { signal: AbortSignal.timeout(5000) });
    if (res.status === 404) return undefined;
    if (!res.ok) throw new Error(`jaeger ${path}: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { data: T }).data;
  };
  await waitFor("jaeger query API", async () => (await get<string[]>("/api/services")) !== undefined, {
    timeoutMs: 60_000,
    proc,
  });
  return {
    otlpEndpoint: `http://127.0.0.1:${otlpPort}`,
    queryUrl,
    trace: async (traceId) => (await get<JaegerTrace[]>(`/api/traces/${traceId}`))?.[0],
    traces: async (service, operation) =>
      (await get<JaegerTrace[]>(
        `/api/traces?service=${encodeURIComponent(service)}&limit=50${operation ? `&operation=${encodeURIComponent(operation)}` : ""}`,
      )) ?? [],
    stop: async () => {
      await proc.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The spans of a trace as a tree, one line per span ("service: name (ms)"), for messages and docs. */
export function spanTree(t: JaegerTrace): string {
  const children = new Map<string, JaegerSpan[]>();
  const ids = new Set(t.spans.map((s) => s.spanID));
  const roots: JaegerSpan[] = [];
  for (const s of [...t.spans].sort((a, b) => a.startTime - b.startTime)) {
    const parent = s.references.find((r) => r.refType === "CHILD_OF" && ids.has(r.spanID))?.spanID;
    if (parent) children.set(parent, [...(children.get(parent) ?? []), s]);
    else roots.push(s);
  }
  const lines: string[] = [];
  const walk = (s: JaegerSpan, depth: number) => {
    const service = t.processes[s.processID]?.serviceName ?? "?";
    lines.push(`${"  ".repeat(depth)}${service}: ${s.operationName} (${(s.duration / 1000).toFixed(1)} ms)`);
    for (const c of children.get(s.spanID) ?? []) walk(c, depth + 1);
  };
  for (const r of roots) walk(r, 0);
  return lines.join("\n");
}
