// The door's decision (trace-sampling.ts) against the configured sampler: requests with no trace
// header take the shared fast path, those with one are asked of the sampler as before.
import { propagation, ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from "@opentelemetry/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { door, newTraceRatioFromEnv, samplerFromEnv, UNSAMPLED_ROOT } from "./trace-sampling.ts";

const SAMPLED = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const UNSAMPLED = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";

beforeAll(() => {
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
});
afterAll(() => propagation.disable());

/** The door that startExporting() builds for this environment. */
const doorOf = (env: NodeJS.ProcessEnv) => door(samplerFromEnv(env), newTraceRatioFromEnv(env));

describe("the door", () => {
  it("leaves out a new trace at ratio 0 in the one shared unsampled context", () => {
    const d = doorOf({ OTEL_TRACES_SAMPLER_ARG: "0" });
    const a = d.decide({ "content-type": "application/json" });
    const b = d.decide({});
    expect(a).toEqual({ sampled: false, context: UNSAMPLED_ROOT });
    expect(b.sampled === false && b.context).toBe(UNSAMPLED_ROOT);
  });

  it("samples every new trace at ratio 1, as a root", () => {
    const d = doorOf({ OTEL_TRACES_SAMPLER: "parentbased_always_on" });
    expect(d.decide({})).toEqual({ sampled: true, parent: ROOT_CONTEXT });
  });

  it("samples new traces at the configured ratio", () => {
    const d = doorOf({ OTEL_TRACES_SAMPLER_ARG: "0.25" });
    let sampled = 0;
    for (let i = 0; i < 20_000; i++) if (d.decide({}).sampled) sampled++;
    // 6 standard deviations either side of 5,000.
    expect(sampled).toBeGreaterThan(4_640);
    expect(sampled).toBeLessThan(5_360);
  });

  it("keeps a caller's decision (parent-based), whatever the ratio for new traces", () => {
    const none = doorOf({ OTEL_TRACES_SAMPLER_ARG: "0" }).decide({ traceparent: SAMPLED });
    expect(none.sampled).toBe(true);
    expect(none.sampled && trace.getSpanContext(none.parent)?.traceId).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
    const all = doorOf({ OTEL_TRACES_SAMPLER: "parentbased_always_on" }).decide({ traceparent: UNSAMPLED });
    expect(all.sampled).toBe(false);
    expect(all.sampled === false && all.context).not.toBe(UNSAMPLED_ROOT);
  });

  it("takes a request with only a caller's baggage through the sampler, not the shared context", () => {
    const d = doorOf({ OTEL_TRACES_SAMPLER_ARG: "0" });
    const decision = d.decide({ baggage: "tenant=blue" });
    expect(decision.sampled).toBe(false);
    expect(decision.sampled === false && decision.context).not.toBe(UNSAMPLED_ROOT);
  });

  it("asks any other sampler for every request (no ratio for new traces given)", () => {
    const d = door(samplerFromEnv({ OTEL_TRACES_SAMPLER: "always_off" }));
    const decision = d.decide({});
    expect(decision.sampled).toBe(false);
    expect(decision.sampled === false && decision.context).not.toBe(UNSAMPLED_ROOT);
  });
});

describe("newTraceRatioFromEnv", () => {
  it.each([
    [{}, 0.01],
    [{ OTEL_TRACES_SAMPLER_ARG: "0.2" }, 0.2],
    [{ OTEL_TRACES_SAMPLER_ARG: "7" }, 0.01],
    [{ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.5" }, 0.5],
    [{ OTEL_TRACES_SAMPLER: "always_on" }, 1],
    [{ OTEL_TRACES_SAMPLER: "parentbased_always_on" }, 1],
    [{ OTEL_TRACES_SAMPLER: "always_off" }, 0],
    [{ OTEL_TRACES_SAMPLER: "parentbased_always_off", OTEL_TRACES_SAMPLER_ARG: "0.5" }, 0],
  ])("%o → %d", (env, ratio) => {
    expect(newTraceRatioFromEnv(env as NodeJS.ProcessEnv)).toBe(ratio);
  });
});
