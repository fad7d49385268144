// Several upstreams per Agent (spec.upstreams) against fake providers on loopback: a first upstream
// answering 429, 503, nothing (timeout) or refusing the connection falls to the next with no error
// the client sees (answers and streams); a 400 is the client's and is not retried elsewhere; a
// stream that already sent bytes is never switched; each upstream's breaker opens after
// breakerFailures failed calls (the upstream is then skipped, no request made), lets one trial
// call through after breakerOpenSeconds and closes when it succeeds, with its state in metrics and
// on the internal API; weights spread first attempts within 5 % over 1,000 requests.
import { HttpGatewayUsage } from "@capstan/operator";
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

let fake: FakeOpenAI;
let gw: RunningGateway;
let keys: Record<string, string>;
const ns = uniqueNamespace("fb");
const view = emptyView();
const tag = Math.random().toString(36).slice(2, 8);

const up = (model: string, extra: Record<string, unknown> = {}) => ({
  baseURL: fake.baseURL,
  model,
  timeoutSeconds: 10,
  ...extra,
});

beforeAll(async () => {
  fake = await startFakeOpenAI();
  const agents = [
    { name: "after-429", spec: { upstreams: [up("status:429"), up(`echo-a-${tag}`)] } },
    { name: "after-503", spec: { upstreams: [up("status:503"), up("status:502"), up(`echo-b-${tag}`)] } },
    { name: "after-timeout", spec: { upstreams: [up("hang", { timeoutSeconds: 1 }), up(`echo-c-${tag}`)] } },
    {
      name: "after-refused",
      spec: { upstreams: [{ baseURL: "http://127.0.0.1:9/v1", model: "x" }, up(`echo-d-${tag}`)] },
    },
    { name: "bad-request", spec: { upstreams: [up("status:400"), up(`echo-e-${tag}`)] } },
    { name: "drops", spec: { upstreams: [up("disconnect:2"), up(`echo-f-${tag}`)] } },
    {
      name: "breaker",
      spec: {
        upstreams: [up(`flaky:3:${tag}`, { name: "primary" }), up(`echo-g-${tag}`, { name: "backup" })],
        routing: { breakerFailures: 2, breakerOpenSeconds: 1 },
      },
    },
    {
      name: "all-down",
      spec: {
        upstreams: [up("status:503"), up("status:500")],
        routing: { breakerFailures: 1, breakerOpenSeconds: 60 },
      },
    },
    {
      name: "weighted",
      spec: { upstreams: [up(`w1-${tag}`, { weight: 1 }), up(`w3-${tag}`, { weight: 3 }), up(`w0-${tag}`)] },
    },
  ];
  keys = addResources(
    view,
    ns,
    agents.map((a) => ({ name: a.name, agent: a.name, qpm: 100_000 })),
    agents,
  );
  gw = await startGateway({ redisUrl: inject("redisUrl"), upstream: { retryBaseMs: 10, retryMaxMs: 50 } }, { view });
});

afterAll(async () => {
  await gw?.close();
  await fake?.close();
});

const ask = (channel: string, content = "hello") =>
  client(gw.url, keys[channel] as string).chat.completions.create({
    model: "m",
    messages: [{ role: "user", content }],
  });

async function streamText(channel: string): Promise<string> {
  const stream = await client(gw.url, keys[channel] as string).chat.completions.create({
    model: "m",
    messages: [{ role: "user", content: "streamed" }],
    stream: true,
  });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
  return text;
}

describe("fallback across upstreams", () => {
  it.each([
    ["after-429", "a"],
    ["after-503", "b"],
    ["after-timeout", "c"],
    ["after-refused", "d"],
  ])("%s: the next upstream answers, no error reaches the client (answer and stream)", async (channel, letter) => {
    const res = await ask(channel, "fall");
    expect(res.choices[0]?.message.content).toBe("echo: fall");
    expect(await streamText(channel)).toBe("echo: streamed");
    expect(fake.callsFor(`echo-${letter}-${tag}`)).toHaveLength(2);
  });

  it("a 400 is the client's: answered as is, the next upstream is not called", async () => {
    const err = await ask("bad-request").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(fake.callsFor(`echo-e-${tag}`)).toHaveLength(0);
  });

  it("a stream that has sent bytes is never switched: the client sees the error event", async () => {
    const stream = await client(gw.url, keys.drops as string).chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "one two three four five" }],
      stream: true,
    });
    let text = "";
    const err = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(text).toBe("echo: one ");
    expect(fake.callsFor(`echo-f-${tag}`)).toHaveLength(0);
  });
});

const internalStates = async (agent: string) =>
  (
    (await (await fetch(`${gw.internalUrl}/internal/v1/upstreams?agent=${encodeURIComponent(agent)}`)).json()) as {
      upstreams: Array<{ upstream: string; circuit: string; model: string }>;
    }
  ).upstreams;

describe("circuit breaker per upstream", () => {
  it("opens after breakerFailures failed calls, skips the upstream, lets one trial through, closes on success", async () => {
    const primary = `flaky:3:${tag}`;
    const labels = { agent: `${ns}/breaker`, upstream: "primary" };
    // Two failed calls (503): both answered by the backup; the breaker opens.
    for (let i = 0; i < 2; i++) expect((await ask("breaker")).choices[0]?.message.content).toBe("echo: hello");
    expect(fake.callsFor(primary)).toHaveLength(2);
    expect(await metricValue(gw.url, "capstan_gateway_upstream_circuit_state", { ...labels, state: "open" })).toBe(1);
    expect(await internalStates(`${ns}/breaker`)).toContainEqual(
      expect.objectContaining({ upstream: "primary", circuit: "open", model: primary }),
    );
    // The operator's client reads the same (it writes it to the Agent's status.upstreams).
    expect(await new HttpGatewayUsage(() => gw.internalUrl).upstreams(`${ns}/breaker`)).toContainEqual(
      expect.objectContaining({ upstream: "primary", circuit: "open" }),
    );
    // Open: the primary is not called at all.
    for (let i = 0; i < 5; i++) await ask("breaker");
    expect(fake.callsFor(primary)).toHaveLength(2);
    expect(
      await metricValue(gw.url, "capstan_gateway_upstream_fallbacks_total", { ...labels, reason: "circuit_open" }),
    ).toBe(5);
    // After breakerOpenSeconds one trial call: it fails (the third 503), the breaker opens again.
    await new Promise((r) => setTimeout(r, 1_100));
    await ask("breaker");
    expect(fake.callsFor(primary)).toHaveLength(3);
    await ask("breaker");
    expect(fake.callsFor(primary)).toHaveLength(3);
    // The next trial succeeds: closed, and the primary answers again.
    await new Promise((r) => setTimeout(r, 1_100));
    await ask("breaker");
    await ask("breaker");
    expect(fake.callsFor(primary)).toHaveLength(5);
    expect(await metricValue(gw.url, "capstan_gateway_upstream_circuit_state", { ...labels, state: "closed" })).toBe(1);
    expect(await metricValue(gw.url, "capstan_gateway_upstream_circuit_state", { ...labels, state: "open" })).toBe(0);
  });

  it("every upstream failing: the last provider error, then with every breaker open a 503 upstreams_unavailable", async () => {
    const first = await ask("all-down").catch((e: unknown) => e);
    expect(first).toBeInstanceOf(OpenAI.InternalServerError);
    expect((first as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    const before = fake.calls.length;
    const second = await ask("all-down").catch((e: unknown) => e);
    expect((second as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect((second as InstanceType<typeof OpenAI.APIError>).code).toBe("upstreams_unavailable");
    expect(fake.calls.length).toBe(before);
  });
});

describe("weights", () => {
  it("spread first attempts by weight within 5 % over 1,000 requests; a weightless upstream is fallback only", async () => {
    const total = 1000;
    let next = 0;
    const worker = async () => {
      while (next < total) {
        next++;
        await ask("weighted");
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    const w1 = fake.callsFor(`w1-${tag}`).length;
    const w3 = fake.callsFor(`w3-${tag}`).length;
    expect(w1 + w3).toBe(total);
    expect(Math.abs(w3 / total - 0.75)).toBeLessThan(0.05);
    expect(Math.abs(w1 / total - 0.25)).toBeLessThan(0.05);
    expect(fake.callsFor(`w0-${tag}`)).toHaveLength(0);
    expect(
      await metricValue(gw.url, "capstan_gateway_upstream_requests_total", { agent: `${ns}/weighted`, upstream: "u1" }),
    ).toBe(w3);
  });
});
