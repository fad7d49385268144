// The OTLP/HTTP span exporter over undici (services/shared/src/trace-export.ts), configured from
// the standard OTEL_EXPORTER_OTLP_* variables as the services are: batches reach the test ground's
// real OpenTelemetry Collector as protobuf, JSON and gzip; the collector's answers a client must
// survive are retried or given up as the OTLP specification says (429/502/503/504 and lost
// connections retried within the export timeout, honouring Retry-After; any other status failing
// at once); a collector that never answers fails the batch within the timeout instead of hanging;
// and the export's own HTTP call is never traced, even when a batch is flushed from inside a
// recorded span with undici's client spans on (trace-client.ts).
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { createRegistry } from "@capstan/shared";
import { otlpHttpProtocol, traceUndiciRequests, UndiciOtlpTraceExporter } from "@capstan/shared/tracing/sdk";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { type ExportResult, ExportResultCode } from "@opentelemetry/core";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FaultProxy, startFaultProxy } from "../ground/fault-proxy.ts";
import { startTraceReceiver, type TraceReceiver, tagOf } from "../ground/trace-receiver.ts";

let receiver: TraceReceiver;
beforeAll(async () => {
  receiver = await startTraceReceiver();
});
afterAll(async () => {
  await receiver?.stop();
});

/** Runs fn with these OTEL_* variables set (the exporter reads them when it is made). */
function withEnv<T>(vars: Record<string, string>, fn: () => T): T {
  const before = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return fn();
  } finally {
    for (const [k, v] of Object.entries(before)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** Finished spans of one service, made by a real tracer provider (read back in memory). */
function spansOf(service: string, names: string[]): ReadableSpan[] {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": service }),
    spanProcessors: [new SimpleSpanProcessor(memory)],
  });
  const tracer = provider.getTracer("otlp-export-test");
  for (const name of names) tracer.startSpan(name, { attributes: { "capstan.test": name } }).end();
  return memory.getFinishedSpans();
}

/** The trace export series of a new registry, `name{labels}` → value. */
async function exportMetrics(): Promise<Map<string, number>> {
  const text = await createRegistry().metrics();
  const series = new Map<string, number>();
  for (const line of text.split("\n")) {
    const m = /^(capstan_trace_export_\S+) (\S+)$/.exec(line);
    if (m) series.set(m[1] as string, Number(m[2]));
  }
  return series;
}

/** fn's first defined answer, polled every 100 ms for at most ms. */
async function poll<T>(fn: () => Promise<T | undefined>, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`nothing after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function exportOnce(exporter: UndiciOtlpTraceExporter, spans: ReadableSpan[]): Promise<ExportResult> {
  return new Promise((resolve) => exporter.export(spans, resolve));
}

describe("the protocol the environment asks for", () => {
  it("is OTLP/HTTP protobuf by default, JSON when asked, and the SDK's own otherwise", () => {
    expect(otlpHttpProtocol({})).toBe("http/protobuf");
    expect(otlpHttpProtocol({ OTEL_TRACES_EXPORTER: "otlp", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" })).toBe(
      "http/json",
    );
    expect(
      otlpHttpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf" }),
    ).toBe("http/protobuf");
    expect(otlpHttpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toBeUndefined();
    expect(otlpHttpProtocol({ OTEL_TRACES_EXPORTER: "console" })).toBeUndefined();
    expect(otlpHttpProtocol({ OTEL_TRACES_EXPORTER: "otlp,zipkin" })).toBeUndefined();
  });
});

describe("export to a real collector", () => {
  for (const [protocol, compression] of [
    ["http/protobuf", "none"],
    ["http/json", "none"],
    ["http/protobuf", "gzip"],
  ] as const) {
    it(`delivers every span and its attributes (${protocol}, compression ${compression})`, async () => {
      const service = `otlp-export-${protocol.replace("/", "-")}-${compression}`;
      const exporter = withEnv(
        { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.otlpEndpoint, OTEL_EXPORTER_OTLP_COMPRESSION: compression },
        () => new UndiciOtlpTraceExporter(protocol),
      );
      const result = await exportOnce(exporter, spansOf(service, ["first", "second"]));
      expect(result.code, String(result.error)).toBe(ExportResultCode.SUCCESS);
      const traces = await poll(async () => {
        const found = await receiver.traces(service);
        return found.length === 2 ? found : undefined;
      }, 10_000);
      const spans = traces.flatMap((t) => t.spans);
      expect(spans.map((s) => s.operationName).sort()).toEqual(["first", "second"]);
      for (const s of spans) expect(tagOf(s, "capstan.test")).toBe(s.operationName);
      await exporter.shutdown();
    });
  }

  it("does not trace its own HTTP call, even flushed from inside a recorded span", async () => {
    const service = "otlp-export-untraced";
    const contextManager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contextManager);
    const exporter = withEnv(
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.otlpEndpoint },
      () => new UndiciOtlpTraceExporter("http/protobuf"),
    );
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ "service.name": service }),
      sampler: new AlwaysOnSampler(),
      spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 50 })],
    });
    trace.setGlobalTracerProvider(provider);
    const unregister = traceUndiciRequests(() => provider.getTracer("otlp-export-test"));
    try {
      const tracer = provider.getTracer("otlp-export-test");
      const outer = tracer.startSpan("outer");
      // The batch's timer starts in the context of the first span ended: a recorded one.
      await context.with(trace.setSpan(context.active(), outer), async () => {
        tracer.startSpan("inner").end();
        await new Promise((resolve) => setTimeout(resolve, 300));
      });
      outer.end();
      await provider.forceFlush();
      const spans = await poll(async () => {
        const found = (await receiver.traces(service)).flatMap((t) => t.spans);
        return found.length >= 2 ? found : undefined;
      }, 10_000);
      expect(spans.map((s) => s.operationName).sort()).toEqual(["inner", "outer"]);
    } finally {
      unregister();
      await provider.shutdown();
      trace.disable();
      context.disable();
    }
  });
});

/** A collector stand-in that answers each export with the next status of a script. */
async function scriptedCollector(answers: { status: number; retryAfter?: string }[]) {
  const seen: { body: Buffer; headers: IncomingMessage["headers"] }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({ body: Buffer.concat(chunks), headers: req.headers });
      const answer = answers[Math.min(seen.length - 1, answers.length - 1)] ?? { status: 200 };
      res.writeHead(answer.status, answer.retryAfter ? { "retry-after": answer.retryAfter } : {});
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise((resolve) => server.close(resolve)) };
}

describe("the collector's answers", () => {
  it("retries 503 and 429 (Retry-After honoured) until the batch is taken", async () => {
    const collector = await scriptedCollector([
      { status: 503, retryAfter: "0" },
      { status: 429, retryAfter: "0" },
      { status: 200 },
    ]);
    const exporter = withEnv(
      { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_COMPRESSION: "gzip" },
      () => new UndiciOtlpTraceExporter("http/protobuf"),
    );
    const before = await exportMetrics();
    const result = await exportOnce(exporter, spansOf("retried", ["a"]));
    expect(result.code, String(result.error)).toBe(ExportResultCode.SUCCESS);
    expect(collector.seen).toHaveLength(3);
    // Each attempt counted by its outcome, the two retries as retries (every registry reports them).
    const after = await exportMetrics();
    expect(after.get('capstan_trace_export_requests_total{outcome="http_503"}')).toBe(
      (before.get('capstan_trace_export_requests_total{outcome="http_503"}') ?? 0) + 1,
    );
    expect(after.get('capstan_trace_export_requests_total{outcome="http_429"}')).toBe(
      (before.get('capstan_trace_export_requests_total{outcome="http_429"}') ?? 0) + 1,
    );
    expect(after.get('capstan_trace_export_requests_total{outcome="ok"}')).toBe(
      (before.get('capstan_trace_export_requests_total{outcome="ok"}') ?? 0) + 1,
    );
    expect(after.get("capstan_trace_export_retries_total")).toBe(
      (before.get("capstan_trace_export_retries_total") ?? 0) + 2,
    );
    for (const { body, headers } of collector.seen) {
      expect(headers["content-encoding"]).toBe("gzip");
      expect(headers["content-type"]).toBe("application/x-protobuf");
      expect(gunzipSync(body).includes(Buffer.from("retried"))).toBe(true);
    }
    await exporter.shutdown();
    await collector.close();
  });

  it("fails a batch the collector refuses (400) at once, without retrying", async () => {
    const collector = await scriptedCollector([{ status: 400 }]);
    const exporter = withEnv(
      { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url },
      () => new UndiciOtlpTraceExporter("http/protobuf"),
    );
    const result = await exportOnce(exporter, spansOf("refused", ["a"]));
    expect(result.code).toBe(ExportResultCode.FAILED);
    expect(String(result.error)).toMatch(/400/);
    expect(collector.seen).toHaveLength(1);
    await exporter.shutdown();
    await collector.close();
  });

  it("gives up on a collector that stays unavailable within the export timeout", async () => {
    const collector = await scriptedCollector([{ status: 503 }]);
    const exporter = withEnv(
      { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_TIMEOUT: "2500" },
      () => new UndiciOtlpTraceExporter("http/protobuf"),
    );
    const started = Date.now();
    const result = await exportOnce(exporter, spansOf("unavailable", ["a"]));
    expect(result.code).toBe(ExportResultCode.FAILED);
    // Backoff of about 1 s, then 1.5 s: two or three attempts fit in 2.5 s, never more.
    expect(collector.seen.length).toBeGreaterThanOrEqual(2);
    expect(collector.seen.length).toBeLessThanOrEqual(3);
    expect(Date.now() - started).toBeLessThan(2500 + 1000);
    await exporter.shutdown();
    await collector.close();
  });
});

describe("a collector that cannot be reached", () => {
  let proxy: FaultProxy;
  beforeAll(async () => {
    proxy = await startFaultProxy(Number(new URL(receiver.otlpEndpoint).port));
  });
  afterAll(async () => {
    await proxy?.close();
  });

  for (const mode of ["blackhole", "refuse"] as const) {
    it(`fails the batch within the timeout (${mode}), then delivers once it is back`, async () => {
      const service = `otlp-export-${mode}`;
      const exporter = withEnv(
        { OTEL_EXPORTER_OTLP_ENDPOINT: proxy.url(), OTEL_EXPORTER_OTLP_TIMEOUT: "1500" },
        () => new UndiciOtlpTraceExporter("http/protobuf"),
      );
      proxy.mode = mode;
      const started = Date.now();
      const lost = await exportOnce(exporter, spansOf(service, ["lost"]));
      expect(lost.code).toBe(ExportResultCode.FAILED);
      expect(Date.now() - started).toBeLessThan(1500 + 1000);
      proxy.mode = "pass";
      const kept = await exportOnce(exporter, spansOf(service, ["kept"]));
      expect(kept.code, String(kept.error)).toBe(ExportResultCode.SUCCESS);
      const spans = await poll(async () => {
        const found = (await receiver.traces(service)).flatMap((t) => t.spans);
        return found.length > 0 ? found : undefined;
      }, 10_000);
      expect(spans.map((s) => s.operationName)).toEqual(["kept"]);
      await exporter.shutdown();
    });
  }
});
