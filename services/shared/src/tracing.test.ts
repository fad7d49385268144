import { spawnSync } from "node:child_process";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { createLogger } from "./logger.ts";
import { startTracing, tracer, withSpan } from "./tracing.ts";

describe("tracing with no exporter configured", () => {
  const handle = startTracing("capstan-test", {});
  afterAll(() => handle.shutdown());

  it("still creates real spans, and log lines carry their trace id", async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger({ name: "t", destination });
    const traceId = await withSpan(tracer("t"), "work", async (span) => {
      logger.info({ apiKey: "cap_chat_secret" }, "inside");
      return span.spanContext().traceId;
    });
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(traceId).not.toBe("0".repeat(32));
    const line = JSON.parse(lines[0] ?? "{}") as Record<string, unknown>;
    expect(line.trace_id).toBe(traceId);
    expect(line.apiKey).toBe("[redacted]");
  });
});

describe("instrumentations in a process started like the services", () => {
  it("joins the caller's trace in a Fastify route and patches ioredis and node:http loaded as ESM", () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const fixture = fileURLToPath(new URL("./tracing.fixture.ts", import.meta.url));
    const run = spawnSync(process.execPath, [fixture], {
      env: { ...process.env, TRACE_ID: traceId, OTEL_SDK_DISABLED: "" },
      encoding: "utf8",
      timeout: 110_000,
    });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout.trim().split("\n").at(-1) ?? "{}")).toEqual({ traceId, ioredis: true, http: true });
    // Loading the OpenTelemetry SDK alone takes seconds on a loaded 2-core machine.
  }, 120_000);
});
