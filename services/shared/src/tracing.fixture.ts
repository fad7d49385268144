// A process started as every Capstan process starts (tracing.test.ts runs it): startTracing()
// with the OTEL_* variables the test gives, then the modules the instrumentations patch, imported
// the ESM way. A Fastify route calls the test's downstream server with fetch; the fixture sends it
// the requests of CALLS (a JSON list of `traceparent` values, or of header objects; null for none) and prints, per
// request, what the route saw of the active span, whether ioredis and node:http were patched, and
// whether the OpenTelemetry SDK was loaded at all.
import { registerHooks } from "node:module";

const loaded: string[] = [];
registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    loaded.push(resolved.url);
    return resolved;
  },
});
const { startTracing } = await import("./tracing.ts");
await startTracing("capstan-fixture");
const { trace } = await import("@opentelemetry/api");
const { Redis } = await import("ioredis");
const { request } = await import("node:http");
const { default: Fastify } = await import("fastify");

const app = Fastify();
app.get("/work/:id", async () => {
  const span = trace.getActiveSpan();
  await (await fetch(process.env.DOWNSTREAM as string)).arrayBuffer();
  return { span: span ? { recording: span.isRecording(), traceId: span.spanContext().traceId } : null };
});
await app.listen({ port: 0, host: "127.0.0.1" });
const address = app.server.address();
const port = typeof address === "object" && address ? address.port : 0;
const seen = [];
for (const [i, call] of (
  JSON.parse(process.env.CALLS ?? "[]") as (string | Record<string, string> | null)[]
).entries()) {
  const headers = typeof call === "string" ? { traceparent: call } : (call ?? {});
  const res = await fetch(`http://127.0.0.1:${port}/work/${i}`, { headers });
  seen.push(await res.json());
}
const wrapped = (fn: unknown) => Boolean((fn as { __wrapped?: boolean }).__wrapped);
// Read while tracing runs: shutting it down takes the Redis patch back.
const patched = { ioredis: wrapped(Redis.prototype.sendCommand), http: wrapped(request) };
await app.close();
const { shutdownTracing } = await import("./tracing.ts");
await shutdownTracing();
process.stdout.write(
  `${JSON.stringify({
    seen,
    ...patched,
    sdk: loaded.some((url) => url.includes("/@opentelemetry/sdk-")),
  })}\n`,
);
process.exit(0);
