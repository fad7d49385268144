// The OpenTelemetry GenAI metrics as the gateway exports them on /metrics, read from a running
// gateway after real traffic to a fake provider speaking the OpenAI wire protocol: every provider
// call counted in gen_ai_client_operation_duration_seconds (failures with their error_type), the
// provider's reported tokens in gen_ai_client_token_usage, every chat request in
// gen_ai_server_request_duration_seconds and each answer's first token in
// gen_ai_server_time_to_first_token_seconds, on the conventions' bucket boundaries, with the
// conventions' attribute names as labels.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parseSeries, type Series } from "../metrics/exposition.ts";
import { type FakeOpenAI, startFakeOpenAI } from "./fake-openai.ts";
import { addResources, client, emptyView, type RunningGateway, startGateway, uniqueNamespace } from "./helpers.ts";

let fake: FakeOpenAI;
let gw: RunningGateway;
let keys: Record<string, string>;
const ns = uniqueNamespace("genai");
const usage = { input: 0, output: 0 };

beforeAll(async () => {
  fake = await startFakeOpenAI();
  const view = emptyView();
  const provider = (model: string) => ({ provider: { baseURL: fake.baseURL, model, maxRetries: 0 } });
  keys = addResources(
    view,
    ns,
    [
      { name: "web", agent: "writer", qpm: 1000 },
      { name: "broken", agent: "failing", qpm: 1000 },
      { name: "quiet", agent: "no-usage", qpm: 1000 },
    ],
    [
      { name: "writer", spec: provider("echo") },
      { name: "failing", spec: provider("status:500") },
      { name: "no-usage", spec: provider("no-usage") },
    ],
  );
  gw = await startGateway({ redisUrl: inject("redisUrl") }, { view });
  const sdk = client(gw.url, keys.web as string);
  const messages = [{ role: "user" as const, content: "count these few words" }];
  for (let i = 0; i < 3; i++) {
    const res = await sdk.chat.completions.create({ model: "m", messages });
    usage.input += res.usage?.prompt_tokens ?? 0;
    usage.output += res.usage?.completion_tokens ?? 0;
  }
  for (let i = 0; i < 2; i++) {
    const stream = await sdk.chat.completions.create({
      model: "m",
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of stream) {
      usage.input += chunk.usage?.prompt_tokens ?? 0;
      usage.output += chunk.usage?.completion_tokens ?? 0;
    }
  }
  const failed = await client(gw.url, keys.broken as string)
    .chat.completions.create({ model: "m", messages })
    .catch((e) => e);
  expect(failed.status).toBe(502);
  // A provider that reports no usage: the call is timed, no tokens are recorded for it.
  await client(gw.url, keys.quiet as string).chat.completions.create({ model: "m", messages });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await fake?.close();
});

async function series(): Promise<Series[]> {
  return parseSeries(await (await fetch(`${gw.internalUrl}/metrics`)).text());
}

/** The value of the one series of `name` whose labels are exactly `labels`. */
function exactly(all: Series[], name: string, labels: Record<string, string>): number | undefined {
  const found = all.filter(
    (s) =>
      s.name === name &&
      Object.keys(s.labels).length === Object.keys(labels).length &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  expect(found.length, `${name}${JSON.stringify(labels)}`).toBeLessThanOrEqual(1);
  return found[0]?.value;
}

// The bucket boundaries the GenAI semantic conventions give each histogram.
const DURATION = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
const TOKENS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
const TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const CHAT_OPENAI = { gen_ai_operation_name: "chat", gen_ai_provider_name: "openai" };
const CHAT_CAPSTAN = { gen_ai_operation_name: "chat", gen_ai_provider_name: "capstan" };

describe("GenAI metrics of a running gateway", () => {
  it("times every provider call by model, failures with their error type", async () => {
    const all = await series();
    const count = "gen_ai_client_operation_duration_seconds_count";
    expect(exactly(all, count, { ...CHAT_OPENAI, gen_ai_request_model: "echo" })).toBe(5);
    expect(exactly(all, count, { ...CHAT_OPENAI, gen_ai_request_model: "no-usage" })).toBe(1);
    expect(
      exactly(all, count, { ...CHAT_OPENAI, gen_ai_request_model: "status:500", error_type: "upstream_error" }),
    ).toBe(1);
    expect(exactly(all, count, { ...CHAT_OPENAI, gen_ai_request_model: "status:500" })).toBeUndefined();
  });

  it("records the tokens the provider reported, input and output", async () => {
    const all = await series();
    const of = (type: string, what: "count" | "sum") =>
      exactly(all, `gen_ai_client_token_usage_${what}`, {
        ...CHAT_OPENAI,
        gen_ai_token_type: type,
        gen_ai_request_model: "echo",
      });
    expect(of("input", "count")).toBe(5);
    expect(of("output", "count")).toBe(5);
    expect(usage.input).toBeGreaterThan(0);
    expect(of("input", "sum")).toBe(usage.input);
    expect(of("output", "sum")).toBe(usage.output);
    // Nothing for the provider that reported no usage, nor for the failed call.
    expect(
      all.filter((s) => s.name.startsWith("gen_ai_client_token_usage") && s.labels.gen_ai_request_model !== "echo"),
    ).toEqual([]);
  });

  it("times every chat request the gateway served and the first token of each answer", async () => {
    const all = await series();
    expect(exactly(all, "gen_ai_server_request_duration_seconds_count", CHAT_CAPSTAN)).toBe(6);
    expect(
      exactly(all, "gen_ai_server_request_duration_seconds_count", { ...CHAT_CAPSTAN, error_type: "upstream_error" }),
    ).toBe(1);
    expect(exactly(all, "gen_ai_server_time_to_first_token_seconds_count", CHAT_CAPSTAN)).toBe(6);
  });

  it("uses the conventions' bucket boundaries", async () => {
    const all = await series();
    const bounds = (name: string) =>
      [...new Set(all.filter((s) => s.name === `${name}_bucket`).map((s) => s.labels.le))]
        .filter((le) => le !== "+Inf")
        .map(Number)
        .sort((a, b) => a - b);
    expect(bounds("gen_ai_client_operation_duration_seconds")).toEqual(DURATION);
    expect(bounds("gen_ai_server_request_duration_seconds")).toEqual(DURATION);
    expect(bounds("gen_ai_client_token_usage")).toEqual(TOKENS);
    expect(bounds("gen_ai_server_time_to_first_token_seconds")).toEqual(TTFT);
  });
});
