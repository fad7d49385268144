// Keep history: exchanges of channels with keepHistory are stored in Redis (a stream per channel)
// and read back through GET /api/v1/history with the channel's key; other channels store nothing.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "./fake-openai.ts";
import { addResources, client, emptyView, type RunningGateway, startGateway, uniqueNamespace } from "./helpers.ts";

let fake: FakeOpenAI;
let gw: RunningGateway;
let redis: Redis;
let keys: Record<string, string>;
const ns = uniqueNamespace("hist");
const view = emptyView();

beforeAll(async () => {
  fake = await startFakeOpenAI();
  redis = new Redis(inject("redisUrl"));
  keys = addResources(
    view,
    ns,
    [
      { name: "kept", agent: "bot", keepHistory: true },
      { name: "not-kept", agent: "bot", keepHistory: false },
    ],
    [{ name: "bot", spec: { provider: { baseURL: fake.baseURL, model: "echo", maxRetries: 0 } } }],
  );
  gw = await startGateway({ redisUrl: inject("redisUrl"), history: { retentionSeconds: 3600 } }, { view });
});

afterAll(async () => {
  await gw?.close();
  await fake?.close();
  redis?.disconnect();
});

async function history(key: string, query = "") {
  const res = await fetch(`${gw.url}/api/v1/history${query}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: await res.json() };
}

async function waitForEntries(key: string, n: number) {
  for (let i = 0; i < 100; i++) {
    const { body } = await history(key, "?limit=100");
    if (body.data.length >= n) return body;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`history never reached ${n} entries`);
}

describe("keep history", () => {
  it("stores each exchange (messages, answer, usage, timings; never the key) and reads it back newest first", async () => {
    const key = keys.kept as string;
    const sdk = client(gw.url, key);
    await sdk.chat.completions.create({ model: "m", messages: [{ role: "user", content: "first question" }] });
    const stream = await sdk.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "second question" }],
      stream: true,
    });
    for await (const _ of stream) {
      // drain
    }
    const body = await waitForEntries(key, 2);
    expect(body.keep_history).toBe(true);
    const [second, first] = body.data;
    expect(first).toMatchObject({
      channel: `${ns}/kept`,
      agent: "bot",
      mode: "llm",
      stream: false,
      status: 200,
      messages: [{ role: "user", content: "first question" }],
      answer: "echo: first question",
      finishReason: "stop",
    });
    expect(first.usage.total_tokens).toBeGreaterThan(0);
    expect(first.id).toMatch(/^chatcmpl-/);
    expect(first.timings.totalMs).toBeGreaterThanOrEqual(0);
    expect(second).toMatchObject({ stream: true, answer: "echo: second question", finishReason: "stop" });
    expect(second.timings.firstTokenMs).toBeGreaterThanOrEqual(0);

    // Stored in Redis as documented, without the key.
    const rows = await redis.xrange(`capstan:history:${ns}/kept`, "-", "+");
    expect(rows).toHaveLength(2);
    expect(JSON.stringify(rows)).not.toContain(key);
    expect(await redis.ttl(`capstan:history:${ns}/kept`)).toBeGreaterThan(3000);
  });

  it("pages with limit and before", async () => {
    const key = keys.kept as string;
    const page1 = await history(key, "?limit=1");
    expect(page1.body.data).toHaveLength(1);
    expect(page1.body.has_more).toBe(true);
    const page2 = await history(key, `?limit=1&before=${page1.body.data[0].cursor}`);
    expect(page2.body.data).toHaveLength(1);
    expect(page2.body.data[0].answer).toBe("echo: first question");
    expect((await history(key, "?limit=0")).status).toBe(400);
    expect((await history(key, "?before=nonsense")).body.error.param).toBe("before");
  });

  it("stores nothing for a channel without keepHistory", async () => {
    const key = keys["not-kept"] as string;
    await client(gw.url, key).chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] });
    const { body } = await history(key);
    expect(body).toEqual({ object: "list", keep_history: false, data: [], has_more: false });
    expect(await redis.exists(`capstan:history:${ns}/not-kept`)).toBe(0);
  });

  it("needs a valid key to read history", async () => {
    expect((await history("cap_chat_wrong")).status).toBe(401);
  });
});
