// A process started as every Capstan process starts (tracing.test.ts runs it): startTracing()
// first, then the modules the instrumentations patch, imported the ESM way. It prints what a
// Fastify route saw of the caller's trace and whether ioredis and node:http came out patched.
import { startTracing } from "./tracing.ts";

startTracing("capstan-fixture", { OTEL_TRACES_EXPORTER: "none" });
const { trace } = await import("@opentelemetry/api");
const { Redis } = await import("ioredis");
const { request } = await import("node:http");
const { default: Fastify } = await import("fastify");

const app = Fastify();
app.get("/work", async () => ({ traceId: trace.getActiveSpan()?.spanContext().traceId ?? null }));
await app.listen({ port: 0, host: "127.0.0.1" });
const address = app.server.address();
const port = typeof address === "object" && address ? address.port : 0;
const res = await fetch(`http://127.0.0.1:${port}/work`, {
  headers: { traceparent: `00-${process.env.TRACE_ID}-00f067aa0ba902b7-01` },
});
const { traceId } = (await res.json()) as { traceId: string | null };
const wrapped = (fn: unknown) => Boolean((fn as { __wrapped?: boolean }).__wrapped);
process.stdout.write(
  `${JSON.stringify({ traceId, ioredis: wrapped(Redis.prototype.sendCommand), http: wrapped(request) })}\n`,
);
await app.close();
process.exit(0);
