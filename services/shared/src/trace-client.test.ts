// undici/fetch client spans (trace-client.ts) against a real server on loopback, read back from a
// real tracer provider: one CLIENT span per call made inside a recorded span, with the HTTP client
// semantic-convention attributes and the `traceparent` the server receives naming it as parent;
// error answers, failed connections and cancelled calls as the conventions say; nothing at all
// for a call made outside a recorded trace.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { context, propagation, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { request } from "undici";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { traceUndiciRequests } from "./trace-client.ts";

const memory = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
const tracer = provider.getTracer("trace-client-test");
const received: (string | undefined)[] = [];
let server: Server;
let base: string;
let undo: () => void;

beforeAll(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  undo = traceUndiciRequests(() => tracer);
  server = createServer((req, res) => {
    received.push(req.headers.traceparent as string | undefined);
    if (req.url?.startsWith("/slow")) return void setTimeout(() => res.end("late"), 2000);
    res.writeHead(req.url?.startsWith("/fail") ? 503 : 200).end("ok");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  undo();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await provider.shutdown();
  propagation.disable();
  context.disable();
});
beforeEach(() => {
  memory.reset();
  received.length = 0;
});

/** Runs fn inside a recorded span; returns that span once fn is done. */
async function inSpan(fn: () => Promise<unknown>): Promise<Span> {
  const parent = tracer.startSpan("parent");
  await context.with(trace.setSpan(context.active(), parent), fn).catch(() => undefined);
  parent.end();
  return parent;
}

const clientSpans = () => memory.getFinishedSpans().filter((s) => s.kind === SpanKind.CLIENT);

describe("client spans of undici and fetch", () => {
  it("makes one CLIENT span per call in a recorded trace, and the server joins under it", async () => {
    const parent = await inSpan(async () => {
      await (await fetch(`${base}/items?page=2`)).text();
      await (await request(`${base}/other`, { method: "POST", body: "x" })).body.text();
    });
    const spans = clientSpans();
    expect(spans.map((s) => s.name)).toEqual(["GET", "POST"]);
    const [get] = spans;
    expect(get?.attributes).toEqual({
      "http.request.method": "GET",
      "url.full": `${base}/items?page=2`,
      "server.address": "127.0.0.1",
      "server.port": Number(new URL(base).port),
      "http.response.status_code": 200,
    });
    expect(spans[1]?.attributes["url.full"]).toBe(`${base}/other`);
    for (const [i, span] of spans.entries()) {
      expect(span.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
      expect(span.spanContext().traceId).toBe(parent.spanContext().traceId);
      expect(received[i]).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
      expect(span.status.code).toBe(SpanStatusCode.UNSET);
    }
  });

  it("marks an error answer (status ERROR, error.type the status code)", async () => {
    await inSpan(async () => (await fetch(`${base}/fail`)).text());
    const [span] = clientSpans();
    expect(span?.attributes["http.response.status_code"]).toBe(503);
    expect(span?.attributes["error.type"]).toBe("503");
    expect(span?.status.code).toBe(SpanStatusCode.ERROR);
  });

  it("records a call that cannot connect, with its error code and the exception", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await inSpan(() => request(`http://127.0.0.1:${port}/`));
    const [span] = clientSpans();
    expect(span?.attributes["error.type"]).toBe("ECONNREFUSED");
    expect(span?.status.code).toBe(SpanStatusCode.ERROR);
    expect(span?.events.map((e) => e.name)).toEqual(["exception"]);
  });

  it("ends a call its caller cancelled without calling it an error", async () => {
    const caller = new AbortController();
    setTimeout(() => caller.abort(), 100);
    await inSpan(() => fetch(`${base}/slow`, { signal: caller.signal }));
    const [span] = clientSpans();
    expect(span).toBeDefined();
    expect(span?.attributes["error.type"]).toBeUndefined();
    expect(span?.status.code).toBe(SpanStatusCode.UNSET);
  });

  it("records a call that timed out as a TimeoutError", async () => {
    await inSpan(() => fetch(`${base}/slow`, { signal: AbortSignal.timeout(100) }));
    const [span] = clientSpans();
    expect(span?.attributes["error.type"]).toBe("TimeoutError");
    expect(span?.status.code).toBe(SpanStatusCode.ERROR);
  });

  it("makes no span and adds no header for a call outside a recorded trace", async () => {
    await (await fetch(`${base}/items`)).text();
    const unsampled = trace.wrapSpanContext({
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      traceFlags: 0,
    });
    await context.with(trace.setSpan(context.active(), unsampled), async () => (await fetch(`${base}/items`)).text());
    expect(clientSpans()).toEqual([]);
    expect(received).toEqual([undefined, undefined]);
  });
});
