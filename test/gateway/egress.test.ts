// An Agent's provider baseURL is a tenant's choice, so the gateway reaches it through the platform's
// egress policy: loopback, link-local (cloud metadata), cluster and private addresses are refused
// (502 upstream_refused naming the host and the range, never the resolved address) unless the
// allow-list (CAPSTAN_EGRESS_ALLOWED_HOSTS) names them, and nothing is sent there. Whatever a
// provider answers in an error body is never passed on to the client: only its status.
import OpenAI, { type APIError } from "openai";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "./fake-openai.ts";
import { addResources, client, emptyView, type RunningGateway, startGateway, uniqueNamespace } from "./helpers.ts";

let fake: FakeOpenAI;
let guarded: RunningGateway;
let allowing: RunningGateway;
let keys: Record<string, string>;
const ns = uniqueNamespace("egress");
const view = emptyView();

beforeAll(async () => {
  fake = await startFakeOpenAI();
  const port = new URL(fake.baseURL).port;
  const agents = [
    { name: "loopback", spec: { provider: { baseURL: fake.baseURL, model: "echo", maxRetries: 2 } } },
    { name: "localhost", spec: { provider: { baseURL: `http://localhost:${port}/v1`, model: "echo" } } },
    { name: "metadata", spec: { provider: { baseURL: "http://169.254.169.254/latest", model: "echo" } } },
    { name: "cluster", spec: { provider: { baseURL: "http://10.96.0.10:80/v1", model: "echo" } } },
    { name: "rejecting", spec: { provider: { baseURL: fake.baseURL, model: "status:400", maxRetries: 0 } } },
    { name: "failing", spec: { provider: { baseURL: fake.baseURL, model: "status:500", maxRetries: 0 } } },
  ];
  keys = addResources(
    view,
    ns,
    agents.map((a) => ({ name: a.name, agent: a.name, qpm: 1000 })),
    agents,
  );
  [guarded, allowing] = await Promise.all([
    // No allow-list: the default of a cluster install.
    startGateway({ redisUrl: inject("redisUrl"), upstream: { allowedHosts: [] } }, { view }),
    startGateway({ redisUrl: inject("redisUrl"), upstream: { allowedHosts: ["127.0.0.1"] } }, { view }),
  ]);
});

afterAll(async () => {
  await Promise.all([guarded?.close(), allowing?.close()]);
  await fake?.close();
});

const ask = (gw: RunningGateway, channel: string) =>
  client(gw.url, keys[channel] as string).chat.completions.create({
    model: "m",
    messages: [{ role: "user", content: "hello" }],
  });

describe("the egress policy for provider URLs", () => {
  for (const [channel, range] of [
    ["loopback", "loopback"],
    ["localhost", "loopback"],
    ["metadata", "linkLocal"],
    ["cluster", "private"],
  ] as const) {
    it(`refuses a ${channel} baseURL without sending anything, naming the ${range} rule`, async () => {
      const before = fake.calls.length;
      const err = await ask(guarded, channel).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect((err as APIError).status).toBe(502);
      expect((err as APIError).code).toBe("upstream_refused");
      const message = String((err as APIError).message);
      expect(message).toContain(`the ${range} range`);
      expect(message).toContain("egress");
      // The rule, not what an in-cluster name resolves to.
      if (channel === "localhost") expect(message).not.toMatch(/127\.0\.0\.1|::1/);
      expect(fake.calls.length).toBe(before);
    });
  }

  it("reaches a non-public provider that the allow-list names", async () => {
    const res = await ask(allowing, "loopback");
    expect(res.choices[0]?.message.content).toBe("echo: hello");
    // localhost resolves to 127.0.0.1 (allowed) or ::1 (not listed): never to anything else.
    const viaName = await ask(allowing, "localhost").catch((e: unknown) => e);
    if (viaName instanceof Error) expect((viaName as APIError).code).toBe("upstream_refused");
    expect((await ask(allowing, "cluster").catch((e: unknown) => e)) as APIError).toMatchObject({
      code: "upstream_refused",
    });
  });

  it("never passes a provider's error body on to the client, only its status", async () => {
    for (const [channel, status] of [
      ["rejecting", 400],
      ["failing", 502],
    ] as const) {
      const err = (await ask(allowing, channel).catch((e: unknown) => e)) as APIError;
      expect(err.status).toBe(status);
      expect(JSON.stringify(err.error)).not.toContain("fake upstream status");
      expect(String(err.message)).toMatch(/the provider answered HTTP (400|500)/);
    }
  });
});
