import { Writable } from "node:stream";
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
