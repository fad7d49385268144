import { execFile } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_SAMPLE_RATIO, samplerFromEnv } from "./trace-sampling.ts";

const CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const SAMPLED = `00-${CALLER_TRACE}-00f067aa0ba902b7-01`;
const UNSAMPLED = `00-${CALLER_TRACE}-00f067aa0ba902b7-00`;

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string } }[];
}

/** The test's side of the fixture: the downstream server the route calls, and an OTLP/JSON sink. */
const traceparents: (string | undefined)[] = [];
const baggages: (string | undefined)[] = [];
const b3s: (string | undefined)[] = [];
const spans: OtlpSpan[] = [];
let downstream: Server;
let sink: Server;
const urlOf = (s: Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;

beforeAll(async () => {
  downstream = createServer((req, res) => {
    traceparents.push(req.headers.traceparent as string | undefined);
    baggages.push(req.headers.baggage as string | undefined);
    b3s.push(req.headers.b3 as string | undefined);
    res.end("ok");
  });
  sink = createServer((req, res) => {
    let body = "";
    req.on("data", (b: Buffer) => {
      body += b.toString();
    });
    req.on("end", () => {
      const parsed = JSON.parse(body) as { resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[] };
      for (const rs of parsed.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? []) spans.push(...(ss.spans ?? []));
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await Promise.all([downstream, sink].map((s) => new Promise<void>((r) => s.listen(0, "127.0.0.1", r))));
});
afterAll(() => {
  downstream.close();
  sink.close();
});

/** Runs the fixture process with these OTEL_* variables and calls; returns what it printed. */
async function runFixture(otel: Record<string, string>, calls: (string | Record<string, string> | null)[]) {
  traceparents.length = 0;
  baggages.length = 0;
  b3s.length = 0;
  spans.length = 0;
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("OTEL_")));
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [fileURLToPath(new URL("./tracing.fixture.ts", import.meta.url))],
    { env: { ...clean, ...otel, DOWNSTREAM: urlOf(downstream), CALLS: JSON.stringify(calls) }, timeout: 110_000 },
  );
  return JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as {
    seen: { span: { recording: boolean; traceId: string } | null }[];
    ioredis: boolean;
    http: boolean;
    sdk: boolean;
  };
}

describe("the sampler from OTEL_TRACES_SAMPLER", () => {
  it("is parent-based with a 1 % ratio for new traces by default, and the standard names otherwise", () => {
    expect(DEFAULT_SAMPLE_RATIO).toBe(0.01);
    expect(samplerFromEnv({}).toString()).toBe(
      "ParentBased{root=TraceIdRatioBased{0.01}, remoteParentSampled=AlwaysOnSampler, remoteParentNotSampled=AlwaysOffSampler, localParentSampled=AlwaysOnSampler, localParentNotSampled=AlwaysOffSampler}",
    );
    expect(samplerFromEnv({ OTEL_TRACES_SAMPLER_ARG: "0.25" }).toString()).toContain("root=TraceIdRatioBased{0.25}");
    expect(samplerFromEnv({ OTEL_TRACES_SAMPLER: "always_on" }).toString()).toBe("AlwaysOnSampler");
    expect(samplerFromEnv({ OTEL_TRACES_SAMPLER: "parentbased_always_on" }).toString()).toContain(
      "root=AlwaysOnSampler",
    );
  });
});

// Loading the OpenTelemetry SDK alone takes seconds on a loaded 2-core machine.
describe("a process started like the services", () => {
  it("with no exporter: loads no SDK, builds no span and patches nothing, but passes a caller's traceparent on untouched", async () => {
    const out = await runFixture({}, [SAMPLED, null]);
    expect(out).toMatchObject({ ioredis: false, http: false, sdk: false });
    // The caller's context is the active one (log lines carry its trace id), as a non-recording span.
    expect(out.seen[0]?.span).toEqual({ recording: false, traceId: CALLER_TRACE });
    expect(out.seen[1]?.span).toBeNull();
    expect(traceparents).toEqual([SAMPLED, undefined]);
  }, 120_000);

  it("exporting: traces a sampled caller's request with a route-named server span and a client span", async () => {
    const out = await runFixture(
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: urlOf(sink),
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        // New traces are never sampled here, so only the caller's decision counts.
        OTEL_TRACES_SAMPLER_ARG: "0",
      },
      [SAMPLED, UNSAMPLED, null, { traceparent: UNSAMPLED, baggage: "tenant=blue" }, null],
    );
    expect(out).toMatchObject({ ioredis: true, http: true, sdk: true });
    expect(out.seen[0]?.span).toEqual({ recording: true, traceId: CALLER_TRACE });
    // Unsampled requests: no span object at all, only their context passed on.
    expect(out.seen[1]?.span).toBeNull();
    expect(out.seen[2]?.span).toBeNull();

    // One server span (named after the route, no per-hook spans) and one client span, both of the caller's trace.
    const names = spans.map((s) => s.name).sort();
    expect(names).toEqual(["GET", "GET /work/:id"]);
    const server = spans.find((s) => s.name === "GET /work/:id") as OtlpSpan;
    const client = spans.find((s) => s.name === "GET") as OtlpSpan;
    expect(server.traceId).toBe(CALLER_TRACE);
    expect(server.parentSpanId).toBe("00f067aa0ba902b7");
    expect(client.parentSpanId).toBe(server.spanId);

    // Downstream: the sampled trace under the client span; the caller's unsampled context as it
    // came; for a request with none, a fresh unsampled one (so the next process does not sample).
    expect(traceparents[0]).toBe(`00-${CALLER_TRACE}-${client.spanId}-01`);
    expect(traceparents[1]).toBe(UNSAMPLED);
    expect(traceparents[2]).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    expect(traceparents[2]).not.toContain(CALLER_TRACE);
    // A caller's baggage goes on with an unsampled trace as with a sampled one; two requests
    // without a trace header get traces of their own.
    expect(traceparents[3]).toBe(UNSAMPLED);
    expect(baggages[3]).toBe("tenant=blue");
    expect(baggages.filter((b) => b !== undefined)).toHaveLength(1);
    expect(traceparents[4]).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    expect(traceparents[4]?.split("-")[1]).not.toBe(traceparents[2]?.split("-")[1]);
  }, 120_000);

  it("exporting with B3 propagation: a request with no trace header passes a fresh unsampled b3 on, no traceparent", async () => {
    await runFixture(
      { OTEL_EXPORTER_OTLP_ENDPOINT: urlOf(sink), OTEL_PROPAGATORS: "b3", OTEL_TRACES_SAMPLER_ARG: "0" },
      [null, null],
    );
    expect(traceparents).toEqual([undefined, undefined]);
    for (const b3 of b3s) expect(b3).toMatch(/^[0-9a-f]{32}-[0-9a-f]{16}-0$/);
    expect(b3s[0]?.split("-")[0]).not.toBe(b3s[1]?.split("-")[0]);
  }, 120_000);
});
