// The resilience policy's behaviour, tested once here for every client that uses it: full-jitter
// bounds, Retry-After (seconds and HTTP-date) honoured and capped, give-up after maxAttempts and
// at the deadline, timeouts, the caller's abort, and the circuit breaker's open → half-open →
// closed cycle. HTTP cases run against a real loopback server; waits are observed with fake
// timers (no timed assertions).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createRegistry, outboundMetrics } from "../metrics.ts";
import { CircuitOpenError, OutboundPolicy, OutboundTimeoutError } from "./policy.ts";
import { parseRetryAfter } from "./retry-after.ts";

/** What the loopback server answers, in order; the last entry repeats. */
let script: { status: number; headers?: Record<string, string>; hang?: boolean }[] = [];
let hits = 0;
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((_req, res) => {
    const step = script[Math.min(hits, script.length - 1)] ?? { status: 200 };
    hits++;
    if (step.hang) return; // never answers
    res.writeHead(step.status, { "content-type": "application/json", ...step.headers });
    res.end(JSON.stringify({ ok: step.status === 200 }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});
afterEach(() => {
  vi.useRealTimers();
  hits = 0;
});

class HttpError extends Error {
  readonly status: number;
  readonly retryAfter: string | undefined;
  constructor(status: number, retryAfter: string | undefined) {
    super(`answered ${status}`);
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

/** One attempt: a real HTTP exchange with the loopback server. */
async function get({ signal }: { signal: AbortSignal }): Promise<number> {
  const res = await fetch(url, { signal });
  await res.arrayBuffer();
  if (!res.ok) throw new HttpError(res.status, res.headers.get("retry-after") ?? undefined);
  return res.status;
}

/** A metric's value for the series whose labels include `labels` (histograms: name_sum / name_count). */
async function value(
  registry: ReturnType<typeof createRegistry>,
  name: string,
  labels: Record<string, string>,
): Promise<number | undefined> {
  const base = name.replace(/_(sum|count)$/, "");
  const metric = registry.getSingleMetric(registry.getSingleMetric(name) ? name : base);
  const data = await metric?.get();
  return data?.values.find(
    (v) =>
      ((v as { metricName?: string }).metricName ?? name) === name &&
      Object.entries(labels).every(([k, want]) => String((v.labels as Record<string, unknown>)[k]) === want),
  )?.value;
}

function metered() {
  const registry = createRegistry({ defaultMetrics: false });
  return { registry, metrics: outboundMetrics(registry, "t") };
}

describe("full jitter", () => {
  it("waits a uniform [0, min(max, base·2^(n-1))) before retry n", () => {
    const low = new OutboundPolicy({ target: "x", baseDelayMs: 100, maxDelayMs: 1_000, random: () => 0 });
    const high = new OutboundPolicy({ target: "x", baseDelayMs: 100, maxDelayMs: 1_000, random: () => 0.999999 });
    expect([1, 2, 3, 4, 5, 6].map((n) => low.backoffMs(n))).toEqual([0, 0, 0, 0, 0, 0]);
    expect([1, 2, 3, 4, 5, 6].map((n) => high.backoffMs(n))).toEqual([99, 199, 399, 799, 999, 999]);
  });

  it("retries a real 503 with waits inside those bounds, then succeeds", async () => {
    script = [{ status: 503 }, { status: 503 }, { status: 502 }, { status: 200 }];
    const delays: number[] = [];
    const { registry, metrics } = metered();
    const policy = new OutboundPolicy({
      target: "loop",
      maxAttempts: 5,
      baseDelayMs: 8,
      maxDelayMs: 20,
      metrics,
      onRetry: (i) => delays.push(i.delayMs),
    });
    expect(await policy.execute(get)).toBe(200);
    expect(hits).toBe(4);
    expect(delays).toHaveLength(3);
    delays.forEach((d, i) => {
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThan(Math.min(20, 8 * 2 ** i));
    });
    expect(await value(registry, "t_outbound_retries_total", { target: "loop" })).toBe(3);
    expect(await value(registry, "t_outbound_requests_total", { target: "loop", outcome: "http_503" })).toBe(2);
    expect(await value(registry, "t_outbound_call_attempts_sum", { target: "loop", outcome: "ok" })).toBe(4);
    expect(await value(registry, "t_outbound_call_attempts_count", { target: "loop", outcome: "ok" })).toBe(1);
  });
});

describe("Retry-After", () => {
  it("parses seconds and HTTP-dates, ignores the unreadable", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(parseRetryAfter("3", now)).toBe(3_000);
    expect(parseRetryAfter("0.5", now)).toBe(500);
    expect(parseRetryAfter(2, now)).toBe(2_000);
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:00:07 GMT", now)).toBe(7_000);
    expect(parseRetryAfter("Wed, 31 Dec 2025 23:00:00 GMT", now)).toBe(0);
    for (const bad of [undefined, null, "", "soon", "-1", "1e3"]) expect(parseRetryAfter(bad, now)).toBeUndefined();
  });

  it("waits what a real 429 asks (seconds), not the jittered backoff", async () => {
    script = [{ status: 429, headers: { "retry-after": "0" } }, { status: 200 }];
    const delays: number[] = [];
    const policy = new OutboundPolicy({ target: "x", baseDelayMs: 5_000, onRetry: (i) => delays.push(i.delayMs) });
    expect(await policy.execute(get)).toBe(200);
    expect(delays).toEqual([0]);
  });

  it("does not retry before the time a Retry-After in seconds names", async () => {
    vi.useFakeTimers();
    let calls = 0;
    const policy = new OutboundPolicy({ target: "x", baseDelayMs: 1 });
    const done = policy.execute(async () => {
      calls++;
      if (calls === 1) throw new HttpError(503, "2");
      return "ok";
    });
    await vi.advanceTimersByTimeAsync(1_999);
    expect(calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toBe(2);
    expect(await done).toBe("ok");
  });

  it("honours an HTTP-date", async () => {
    vi.useFakeTimers();
    vi.setSystemTime(Date.parse("2026-01-01T00:00:00Z"));
    let calls = 0;
    const delays: number[] = [];
    const policy = new OutboundPolicy({ target: "x", baseDelayMs: 1, onRetry: (i) => delays.push(i.delayMs) });
    const done = policy.execute(async () => {
      calls++;
      if (calls === 1) throw new HttpError(429, "Thu, 01 Jan 2026 00:00:05 GMT");
      return "ok";
    });
    await vi.advanceTimersByTimeAsync(4_999);
    expect(calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(await done).toBe("ok");
    expect(delays).toEqual([5_000]);
  });

  it("gives up at once, with the server's answer, when Retry-After exceeds the cap", async () => {
    script = [{ status: 429, headers: { "retry-after": "120" } }, { status: 200 }];
    const { registry, metrics } = metered();
    const policy = new OutboundPolicy({ target: "cap", retryAfterCapMs: 30_000, metrics });
    const err = await policy.execute(get).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).retryAfter).toBe("120");
    expect(hits).toBe(1);
    expect(await value(registry, "t_outbound_call_attempts_count", { target: "cap", outcome: "gave_up" })).toBe(1);
  });
});

describe("give-up", () => {
  it("stops after maxAttempts with the last error", async () => {
    script = [{ status: 503 }, { status: 503 }, { status: 500 }];
    const { registry, metrics } = metered();
    const policy = new OutboundPolicy({ target: "g", maxAttempts: 3, baseDelayMs: 2, metrics });
    const err = (await policy.execute(get).catch((e: unknown) => e)) as HttpError;
    expect(err.status).toBe(500);
    expect(hits).toBe(3);
    expect(await value(registry, "t_outbound_call_attempts_sum", { target: "g", outcome: "gave_up" })).toBe(3);
  });

  it("never retries an answer that will not change (400)", async () => {
    script = [{ status: 400 }, { status: 200 }];
    const { registry, metrics } = metered();
    const policy = new OutboundPolicy({ target: "f", baseDelayMs: 1, metrics });
    expect(((await policy.execute(get).catch((e: unknown) => e)) as HttpError).status).toBe(400);
    expect(hits).toBe(1);
    expect(await value(registry, "t_outbound_call_attempts_count", { target: "f", outcome: "failed" })).toBe(1);
  });

  it("gives up before a wait that would end past the deadline", async () => {
    script = [{ status: 503 }, { status: 200 }];
    const policy = new OutboundPolicy({
      target: "d",
      maxAttempts: 5,
      baseDelayMs: 10_000,
      maxDelayMs: 10_000,
      deadlineMs: 5_000,
      random: () => 0.9,
    });
    expect(((await policy.execute(get).catch((e: unknown) => e)) as HttpError).status).toBe(503);
    expect(hits).toBe(1);
    // The same call with a deadline that leaves room for the wait retries.
    script = [{ status: 503 }, { status: 200 }];
    hits = 0;
    const roomy = new OutboundPolicy({ target: "d", baseDelayMs: 10, deadlineMs: 60_000, random: () => 0.5 });
    expect(await roomy.execute(get)).toBe(200);
    expect(hits).toBe(2);
  });

  it("ends an attempt at its timeout with the client's own error, and retries it", async () => {
    script = [{ status: 0, hang: true }, { status: 200 }];
    class MyTimeout extends Error {}
    const { registry, metrics } = metered();
    const policy = new OutboundPolicy({
      target: "slow",
      timeoutMs: 100,
      baseDelayMs: 1,
      timeoutError: (ms) => new MyTimeout(`after ${ms}`),
      metrics,
    });
    expect(await policy.execute(get)).toBe(200);
    expect(await value(registry, "t_outbound_requests_total", { target: "slow", outcome: "timeout" })).toBe(1);
    script = [{ status: 0, hang: true }];
    hits = 0;
    const once = new OutboundPolicy({ target: "slow", timeoutMs: 50, maxAttempts: 1 });
    expect(await once.execute(get).catch((e: unknown) => e)).toBeInstanceOf(OutboundTimeoutError);
    const mine = new OutboundPolicy({
      target: "slow",
      timeoutMs: 50,
      maxAttempts: 1,
      timeoutError: () => new MyTimeout(),
    });
    expect(await mine.execute(get).catch((e: unknown) => e)).toBeInstanceOf(MyTimeout);
  });

  it("stops at once when the caller aborts, even during a backoff wait", async () => {
    script = [{ status: 503 }];
    const controller = new AbortController();
    const policy = new OutboundPolicy({ target: "a", baseDelayMs: 60_000, maxDelayMs: 60_000, random: () => 0.5 });
    const done = policy.execute(get, { signal: controller.signal }).catch((e: unknown) => e);
    await vi.waitFor(() => expect(hits).toBe(1));
    controller.abort(new Error("client gone"));
    expect(((await done) as Error).message).toBe("client gone");
    expect(hits).toBe(1);
  });
});

describe("circuit breaker", () => {
  it("opens after consecutive failures, lets one trial through when half-open, closes on success", async () => {
    vi.useFakeTimers();
    let calls = 0;
    let healthy = false;
    const policy = new OutboundPolicy({
      target: "dep",
      maxAttempts: 1,
      breaker: { consecutiveFailures: 3, halfOpenAfterMs: 10_000 },
    });
    const call = () =>
      policy.execute(async () => {
        calls++;
        if (!healthy) throw new HttpError(503, undefined);
        return "ok";
      });
    for (let i = 0; i < 3; i++) await expect(call()).rejects.toBeInstanceOf(HttpError);
    expect(policy.circuit).toBe("open");
    // Open: refused without calling the dependency.
    await expect(call()).rejects.toBeInstanceOf(CircuitOpenError);
    expect(calls).toBe(3);
    // A 4xx-like failure does not count: only the dependency being unwell does (checked below by
    // the trial). After halfOpenAfter, one trial goes through; it fails: open again.
    await vi.advanceTimersByTimeAsync(10_000);
    await expect(call()).rejects.toBeInstanceOf(HttpError);
    expect(calls).toBe(4);
    expect(policy.circuit).toBe("open");
    await expect(call()).rejects.toBeInstanceOf(CircuitOpenError);
    // Next trial succeeds: closed, calls flow again.
    await vi.advanceTimersByTimeAsync(10_000);
    healthy = true;
    expect(await call()).toBe("ok");
    expect(policy.circuit).toBe("closed");
    expect(await call()).toBe("ok");
    expect(calls).toBe(6);
  });

  it("is not opened by answers that are the caller's fault", async () => {
    const policy = new OutboundPolicy({
      target: "dep",
      maxAttempts: 1,
      breaker: { consecutiveFailures: 2, halfOpenAfterMs: 10_000 },
    });
    for (let i = 0; i < 5; i++)
      await expect(
        policy.execute(async () => {
          throw new HttpError(404, undefined);
        }),
      ).rejects.toBeInstanceOf(HttpError);
    expect(policy.circuit).toBe("closed");
  });

  it("gives the client's own error when open, and counts circuit_open", async () => {
    class Down extends Error {}
    const { registry, metrics } = metered();
    const policy = new OutboundPolicy({
      target: "dep",
      maxAttempts: 2,
      baseDelayMs: 1,
      breaker: { consecutiveFailures: 1, halfOpenAfterMs: 60_000 },
      circuitOpenError: () => new Down("dependency down"),
      metrics,
    });
    // The first attempt fails and opens the breaker; the retry is refused by it: no second call.
    let calls = 0;
    const err = await policy
      .execute(async () => {
        calls++;
        throw new HttpError(502, undefined);
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Down);
    expect(calls).toBe(1);
    expect(await value(registry, "t_outbound_call_attempts_count", { target: "dep", outcome: "circuit_open" })).toBe(1);
  });
});
