// Redis client spans (services/shared/src/trace-redis.ts) against the test ground's Redis, read
// back from a real tracer provider: one CLIENT span per command sent inside a recorded span, with
// the database conventions' attributes (the statement keeps key names, never values); pipelines
// and transactions named as such; an error reply marked; nothing for a command sent outside a
// recorded trace; and the patch undone cleanly.
import { randomBytes } from "node:crypto";
import { traceRedisCommands } from "@capstan/shared/tracing/sdk";
import { context, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { Redis } from "ioredis";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";

const memory = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
const tracer = provider.getTracer("redis-spans-test");
const key = `capstan-test:redis-spans:${randomBytes(4).toString("hex")}`;
let redis: Redis;
let undo: () => void;

beforeAll(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  undo = traceRedisCommands(() => tracer);
  redis = new Redis(inject("redisUrl"), { lazyConnect: true });
  await redis.connect();
});
afterAll(async () => {
  undo();
  await redis.del(key, `${key}:n`);
  await redis.quit();
  await provider.shutdown();
  context.disable();
});
beforeEach(() => memory.reset());

async function inSpan(fn: () => Promise<unknown>): Promise<Span> {
  const parent = tracer.startSpan("parent");
  await context.with(trace.setSpan(context.active(), parent), fn).catch(() => undefined);
  parent.end();
  return parent;
}
const redisSpans = () => memory.getFinishedSpans().filter((s) => s.kind === SpanKind.CLIENT);

describe("Redis client spans", () => {
  it("makes one CLIENT span per command in a recorded trace, keeping key names but no values", async () => {
    const parent = await inSpan(async () => {
      await redis.set(key, "secret-value");
      await redis.get(key);
    });
    const spans = redisSpans();
    expect(spans.map((s) => s.name)).toEqual(["set", "get"]);
    const url = new URL(inject("redisUrl"));
    expect(spans[0]?.attributes).toEqual({
      "db.system.name": "redis",
      "db.operation.name": "set",
      "db.query.text": `set ${key} [1 other arguments]`,
      "server.address": url.hostname,
      "server.port": Number(url.port),
    });
    expect(spans[1]?.attributes["db.query.text"]).toBe(`get ${key}`);
    for (const s of spans) {
      expect(s.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
      expect(JSON.stringify(s.attributes)).not.toContain("secret-value");
      expect(s.status.code).toBe(SpanStatusCode.UNSET);
    }
  });

  it("names commands sent in a pipeline or a transaction after it", async () => {
    await inSpan(async () => {
      await redis.pipeline().get(key).incr(`${key}:n`).exec();
      await redis.multi().get(key).exec();
    });
    const ops = redisSpans().map((s) => s.attributes["db.operation.name"]);
    expect(ops).toEqual(expect.arrayContaining(["PIPELINE get", "PIPELINE incr", "multi", "MULTI get", "exec"]));
  });

  it("marks an error reply", async () => {
    await redis.set(key, "not a number");
    memory.reset();
    await inSpan(() => redis.incr(key));
    const [span] = redisSpans();
    expect(span?.name).toBe("incr");
    expect(span?.attributes["error.type"]).toBe("ReplyError");
    expect(span?.status.code).toBe(SpanStatusCode.ERROR);
    expect(span?.events.map((e) => e.name)).toEqual(["exception"]);
  });

  it("makes no span for a command outside a recorded trace", async () => {
    await redis.get(key);
    const unsampled = trace.wrapSpanContext({
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      traceFlags: 0,
    });
    await context.with(trace.setSpan(context.active(), unsampled), () => redis.get(key));
    expect(redisSpans()).toEqual([]);
  });

  it("is undone: no span once the patch is taken back", async () => {
    undo();
    try {
      await inSpan(() => redis.get(key));
      expect(redisSpans()).toEqual([]);
    } finally {
      undo = traceRedisCommands(() => tracer);
    }
  });
});
