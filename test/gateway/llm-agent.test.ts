// The LLM agent against a fake OpenAI-compatible provider speaking the real wire protocol:
// retries before the first byte, error mapping (429 → 429, 400 → 400, 5xx → 502, timeout → 504),
// slow streams, a provider that drops the connection mid-stream, a client that goes away (the
// upstream call is aborted), W3C traceparent propagation and provider keys from mounted Secrets.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "./fake-openai.ts";
import {
  addResources,
  client,
  emptyView,
  metricValue,
  type RunningGateway,
  startGateway,
  uniqueNamespace,
} from "./helpers.ts";
import { startTestTracing } from "./tracing.ts";

let fake: FakeOpenAI;
let gw: RunningGateway;
let keys: Record<string, string>;
let secretsDir: string;
const ns = uniqueNamespace("llm");
const view = emptyView();
const tag = Math.random().toString(36).slice(2, 8);
const tracing = startTestTracing();
const PROVIDER_KEY = "sk-test-provider-secret-value";

function llm(name: string, model: string, extra: Record<string, unknown> = {}) {
  return { name, spec: { provider: { baseURL: fake.baseURL, model, maxRetries: 0, timeoutSeconds: 30, ...extra } } };
}

beforeAll(async () => {
  fake = await startFakeOpenAI();
  secretsDir = mkdtempSync(join(tmpdir(), "gw-secrets-"));
  mkdirSync(join(secretsDir, ns, "llm-key"), { recursive: true });
  writeFileSync(join(secretsDir, ns, "llm-key", "apiKey"), `${PROVIDER_KEY}\n`);
  const agents = [
    llm("flaky", `flaky:2:${tag}`, { maxRetries: 2 }),
    llm("flaky-short", `flaky:5:${tag}`, { maxRetries: 1 }),
    llm("limited", "status:429"),
    llm("broken", "status:500", { maxRetries: 2 }),
    llm("rejecting", "status:400"),
    llm("hanging", "hang", { timeoutSeconds: 1 }),
    llm("slow", "slow:40"),
    llm("slower", "slow:400"),
    llm("dropping", "disconnect:2"),
    llm("no-usage", "no-usage"),
    llm("big", "big:3000"),
    llm("keyed", "echo", { apiKeySecretRef: { name: "llm-key", key: "apiKey" } }),
    llm("unkeyed", "echo", { apiKeySecretRef: { name: "absent", key: "apiKey" } }),
  ];
  keys = addResources(
    view,
    ns,
    agents.map((a) => ({ name: a.name, agent: a.name, qpm: 1000 })),
    agents,
  );
  gw = await startGateway(
    { redisUrl: inject("redisUrl"), secretsDir, upstream: { retryBaseMs: 10, retryMaxMs: 50 } },
    { view },
  );
});

afterAll(async () => {
  await gw?.close();
  await fake?.close();
  await tracing.shutdown();
  rmSync(secretsDir, { recursive: true, force: true });
});

const ask = (channel: string, content = "hello") =>
  client(gw.url, keys[channel] as string).chat.completions.create({
    model: "m",
    messages: [{ role: "user", content }],
  });

const askStream = (channel: string, content = "one two three four five") =>
  client(gw.url, keys[channel] as string).chat.completions.create({
    model: "m",
    messages: [{ role: "user", content }],
    stream: true,
    stream_options: { include_usage: true },
  });

describe("LLM agent: retries and error mapping", () => {
  it("retries 5xx before the first byte and then answers", async () => {
    const res = await ask("flaky");
    expect(res.choices[0]?.message.content).toBe("echo: hello");
    expect(fake.callsFor(`flaky:2:${tag}`)).toHaveLength(3);
    expect(
      await metricValue(gw.url, "capstan_gateway_outbound_retries_total", { target: "llm" }),
    ).toBeGreaterThanOrEqual(2);
  });

  it("gives up after maxRetries with a 502", async () => {
    const err = await ask("flaky-short").catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(err.status).toBe(502);
    expect(err.code).toBe("upstream_error");
    expect(fake.callsFor(`flaky:5:${tag}`)).toHaveLength(2);
  });

  it("maps a provider 429 to a 429 RateLimitError", async () => {
    const err = await ask("limited").catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err.code).toBe("upstream_rate_limited");
  });

  it("maps a provider 500 to 502 after the bounded retries", async () => {
    const before = fake.callsFor("status:500").length;
    const err = await ask("broken").catch((e) => e);
    expect(err.status).toBe(502);
    expect(err.error).toMatchObject({ type: "server_error", code: "upstream_error" });
    expect(fake.callsFor("status:500").length - before).toBe(3);
  });

  it("maps a provider 400 to a 400 without retrying", async () => {
    const before = fake.callsFor("status:400").length;
    const err = await ask("rejecting").catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(fake.callsFor("status:400").length - before).toBe(1);
  });

  it("maps a provider that does not answer in time to 504, stream or not", async () => {
    const err = await ask("hanging").catch((e) => e);
    expect(err.status).toBe(504);
    expect(err.code).toBe("upstream_timeout");
    const streamErr = await askStream("hanging").catch((e) => e);
    expect(streamErr.status).toBe(504);
  });

  it("maps a provider that drops the connection to 502 (non-stream)", async () => {
    const err = await ask("dropping").catch((e) => e);
    expect(err.status).toBe(502);
  });
});

describe("LLM agent: streaming", () => {
  it("passes a slow stream through chunk by chunk", async () => {
    const stream = await askStream("slow", "a b c d e f");
    let text = "";
    let chunks = 0;
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const c of stream) {
      chunks++;
      text += c.choices[0]?.delta.content ?? "";
      if (c.usage) usage = c.usage;
    }
    expect(text).toBe("echo: a b c d e f");
    expect(chunks).toBeGreaterThanOrEqual(8); // role, 7 words, finish, usage
    expect(usage?.completion_tokens).toBe(7);
    // No channel label on latency histograms: the streamed LLM answers of this gateway.
    const ttft = await metricValue(gw.url, "capstan_gateway_time_to_first_token_seconds_count", {
      mode: "llm",
      stream: "true",
    });
    expect(ttft).toBeGreaterThanOrEqual(1);
  });

  it("counts usage with the tokenizer when the provider sends none", async () => {
    const res = await ask("no-usage", "count my tokens");
    expect(res.usage?.completion_tokens).toBeGreaterThan(0);
    expect(res.usage?.total_tokens).toBe((res.usage?.prompt_tokens ?? 0) + (res.usage?.completion_tokens ?? 0));
  });

  it("ends the stream with an OpenAI error event when the provider drops mid-stream", async () => {
    const stream = await askStream("dropping", "one two three four five six");
    let text = "";
    const err = await (async () => {
      for await (const c of stream) text += c.choices[0]?.delta.content ?? "";
    })().catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(String(err.message)).toMatch(/model provider failed/);
    expect(text.length).toBeGreaterThan(0);
  });

  it("aborts the upstream call when the client goes away", async () => {
    const before = await metricValue(gw.url, "capstan_gateway_client_disconnects_total", { channel: `${ns}/slower` });
    const stream = await askStream("slower", "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10");
    for await (const c of stream) {
      if (c.choices[0]?.delta.content) break; // leaving the loop aborts the SDK's request
    }
    const call = fake.callsFor("slow:400").at(-1);
    for (let i = 0; i < 100 && !call?.aborted; i++) await new Promise((r) => setTimeout(r, 50));
    expect(call?.aborted).toBe(true);
    expect(call?.completed).toBe(false);
    for (let i = 0; i < 100; i++) {
      if ((await metricValue(gw.url, "capstan_gateway_client_disconnects_total", { channel: `${ns}/slower` })) > before)
        break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await metricValue(gw.url, "capstan_gateway_client_disconnects_total", { channel: `${ns}/slower` })).toBe(
      before + 1,
    );
    // The log line says so, with the request's trace id.
    const line = gw.logs.map((l) => JSON.parse(l)).find((l) => l.msg?.includes("client disconnected mid-stream"));
    expect(line?.trace_id).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe("LLM agent: backpressure and non-stream disconnects", () => {
  it("stops reading the provider while the client is not reading, and delivers everything after", async () => {
    const { request } = await import("node:http");
    const url = new URL(`${gw.url}/api/v1/chat/completions`);
    const res = await new Promise<import("node:http").IncomingMessage>((resolve, reject) => {
      const req = request(
        url,
        { method: "POST", headers: { authorization: `Bearer ${keys.big}`, "content-type": "application/json" } },
        resolve,
      );
      req.on("error", reject);
      req.end(JSON.stringify({ model: "m", messages: [{ role: "user", content: "big" }], stream: true }));
    });
    expect(res.statusCode).toBe(200);
    res.pause(); // a slow client: read nothing for now
    const call = () => fake.callsFor("big:3000").at(-1);
    for (let i = 0; i < 600 && !(call()?.blockedWrites ?? 0); i++) await new Promise((r) => setTimeout(r, 50));
    // The provider's writes block: the gateway stopped pulling its stream instead of buffering it.
    expect(call()?.blockedWrites).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 500));
    expect(call()?.completed).toBe(false); // still held back while the client reads nothing
    let text = "";
    let content = 0;
    res.setEncoding("utf8");
    for await (const chunk of res) text += chunk;
    for (const event of text.split("\n\n")) {
      if (!event.startsWith("data: {")) continue;
      content += (JSON.parse(event.slice(6)).choices[0]?.delta?.content ?? "").length;
    }
    expect(content).toBe(3000 * 8192);
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
    expect(call()?.completed).toBe(true);
  });

  it("aborts the provider call when a non-stream client goes away", async () => {
    const before = fake.callsFor("slow:400").length;
    const controller = new AbortController();
    const traceId = "5bf92f3577b34da6a3ce929d0e0e4737";
    const pending = client(gw.url, keys.slower as string)
      .chat.completions.create(
        { model: "m", messages: [{ role: "user", content: "bye" }] },
        { signal: controller.signal, headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } },
      )
      .catch((e) => e);
    for (let i = 0; i < 200 && fake.callsFor("slow:400").length === before; i++)
      await new Promise((r) => setTimeout(r, 10));
    controller.abort();
    expect(await pending).toBeInstanceOf(OpenAI.APIUserAbortError);
    const call = fake.callsFor("slow:400").at(-1);
    for (let i = 0; i < 100 && !call?.aborted; i++) await new Promise((r) => setTimeout(r, 50));
    expect(call?.aborted).toBe(true);
    expect(call?.completed).toBe(false);
    // The server span ends when the client leaves, marked as abandoned rather than answered.
    const server = () =>
      tracing.exporter
        .getFinishedSpans()
        .find((s) => s.spanContext().traceId === traceId && s.kind === SpanKind.SERVER);
    for (let i = 0; i < 100 && !server(); i++) await new Promise((r) => setTimeout(r, 50));
    expect(server()?.attributes["error.type"]).toBe("aborted");
    expect(server()?.status.code).toBe(SpanStatusCode.ERROR);
  });
});

describe("LLM agent: tracing and provider keys", () => {
  it("propagates the caller's W3C trace to the provider", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const res = await fetch(`${gw.url}/api/v1/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${keys.keyed}`,
        "content-type": "application/json",
        traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
      },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "trace me" }] }),
    });
    expect(res.status).toBe(200);
    const header = String(fake.calls.at(-1)?.headers.traceparent ?? "");
    // The gateway's spans: the http server span (child of the caller, named after the route,
    // with the channel and the limiter's decision) → the agent step (GenAI invoke_agent) → the
    // provider call (GenAI chat) → its HTTP client span (undici instrumentation), whose id is the
    // traceparent the provider saw. No per-hook spans.
    const spans = tracing.exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    const byName = new Map(spans.map((s) => [s.name, s]));
    const server = byName.get("POST /api/v1/chat/completions");
    expect(server?.kind).toBe(SpanKind.SERVER);
    expect(server?.parentSpanContext?.spanId).toBe("00f067aa0ba902b7");
    expect(server?.attributes).toMatchObject({
      "http.route": "/api/v1/chat/completions",
      "capstan.channel": expect.any(String),
      "capstan.limiter.allowed": true,
      "http.response.status_code": 200,
    });
    expect(server?.status.code).toBe(SpanStatusCode.UNSET);
    expect(spans.map((s) => s.name).filter((n) => /^(request|onRequest|handler)\b/.test(n))).toEqual([]);
    const agent = byName.get("invoke_agent keyed");
    expect(agent?.kind).toBe(SpanKind.INTERNAL);
    expect(agent?.parentSpanContext?.spanId).toBe(server?.spanContext().spanId);
    expect(agent?.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "keyed",
      "gen_ai.request.model": "echo",
      "gen_ai.usage.input_tokens": expect.any(Number),
      "gen_ai.usage.output_tokens": expect.any(Number),
    });
    // gen_ai.server.time_to_first_token is a server metric, never a span attribute.
    expect(spans.filter((s) => "gen_ai.server.time_to_first_token" in s.attributes)).toEqual([]);
    const provider = byName.get("chat echo");
    expect(provider?.kind).toBe(SpanKind.CLIENT);
    expect(provider?.parentSpanContext?.spanId).toBe(agent?.spanContext().spanId);
    expect(provider?.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "echo",
      "gen_ai.response.finish_reasons": ["stop"],
      "gen_ai.usage.input_tokens": expect.any(Number),
    });
    const http = spans.find((s) => s.name === "POST" && s.parentSpanContext?.spanId === provider?.spanContext().spanId);
    expect(header.split("-")[2]).toBe(http?.spanContext().spanId);
  });

  it("sends the provider key read from the mounted Secret, and never logs it", async () => {
    await ask("keyed");
    expect(fake.calls.at(-1)?.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
    expect(gw.logs.join("\n")).not.toContain(PROVIDER_KEY);
  });

  it("answers 502 provider_key_missing when the Secret cannot be read", async () => {
    const before = fake.calls.length;
    const err = await ask("unkeyed").catch((e) => e);
    expect(err.status).toBe(502);
    expect(err.code).toBe("provider_key_missing");
    expect(fake.calls.length).toBe(before);
  });
});
