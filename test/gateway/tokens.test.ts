// Token limits and usage per AccessChannel on a real Redis: the TPM shared by two gateway replicas
// (exact on prompt tokens; the overshoot of completions measured), a budget that ends with the
// documented error (429 budget_exhausted, Retry-After to the next period) and its spend on the
// internal API, and the hourly usage per agent, upstream and model with its cost, read back from
// Redis by a replica that did not serve the requests.
import { HttpGatewayUsage } from "@capstan/operator";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "./fake-openai.ts";
import { addResources, emptyView, type RunningGateway, startGateway, uniqueNamespace } from "./helpers.ts";

let fake: FakeOpenAI;
let a: RunningGateway;
let b: RunningGateway;
let keys: Record<string, string>;
const ns = uniqueNamespace("tok");
const view = emptyView();
const TPM = 1000;
const BUDGET = 200;
const prompt = Array.from({ length: 40 }, (_, i) => `word${i}`).join(" ");

beforeAll(async () => {
  fake = await startFakeOpenAI();
  // "no-usage": the provider reports no usage, so the gateway counts it with the tokenizer it
  // admits with, and the answers' usage is exactly what the limiter counted.
  const dropping = {
    name: "dropping",
    spec: { provider: { baseURL: fake.baseURL, model: "disconnect:2", maxRetries: 0 } },
  };
  const agent = {
    name: "counted",
    spec: {
      provider: { baseURL: fake.baseURL, model: "no-usage", maxRetries: 0 },
      prices: [{ model: "no-usage", promptPerMillion: 2.5, completionPerMillion: 10 }],
    },
  };
  keys = addResources(
    view,
    ns,
    [
      { name: "tpm", agent: "counted", qpm: 100_000 },
      { name: "budget", agent: "counted", qpm: 100_000 },
      { name: "plain", agent: "counted", qpm: 100_000 },
      { name: "cut", agent: "dropping", qpm: 100_000 },
    ],
    [agent, dropping],
  );
  // addResources knows qpm only: the token fields are set on the parsed channels.
  for (const c of view.list("AccessChannel").filter((c) => c.metadata.namespace === ns)) {
    if (c.metadata.name === "tpm") c.spec.tpm = TPM;
    if (c.metadata.name === "budget") c.spec.budget = { tokens: BUDGET, period: "day", warnPercent: 80 };
    if (c.metadata.name === "cut") c.spec.budget = { tokens: 1_000_000, period: "day", warnPercent: 80 };
    view.upsert(c);
  }
  const redisUrl = inject("redisUrl");
  a = await startGateway({ redisUrl, limiter: { redisTimeoutMs: 10_000 } }, { view });
  b = await startGateway({ redisUrl, limiter: { redisTimeoutMs: 10_000 } }, { view });
});

afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await fake?.close();
});

interface Outcome {
  status: number;
  remainingTokens: string | null;
  usage?: { prompt_tokens: number; completion_tokens: number };
  error?: { code: string; type: string };
  retryAfter: string | null;
}

async function post(url: string, key: string, content = prompt): Promise<Outcome> {
  const r = await fetch(`${url}/api/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages: [{ role: "user", content }] }),
  });
  const json = (await r.json()) as Omit<Outcome, "status" | "retryAfter">;
  return {
    status: r.status,
    ...json,
    retryAfter: r.headers.get("retry-after"),
    remainingTokens: r.headers.get("x-ratelimit-remaining-tokens"),
  };
}

const sum = (xs: number[]) => xs.reduce((n, x) => n + x, 0);

describe("tokens per minute", () => {
  it("two replicas sharing Redis admit at most the channel's TPM of prompt tokens; completions overshoot by a bounded amount", async () => {
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => post(i % 2 === 0 ? a.url : b.url, keys.tpm as string)),
    );
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 429);
    expect(ok.length + refused.length).toBe(60);
    const prompts = sum(ok.map((r) => r.usage?.prompt_tokens ?? 0));
    const completions = sum(ok.map((r) => r.usage?.completion_tokens ?? 0));
    const each = ok[0]?.usage?.prompt_tokens ?? 0;
    // Exact on prompts: never above the TPM, and not short of it by more than one request and the
    // completions settled meanwhile (which count against the window too).
    expect(prompts).toBeLessThanOrEqual(TPM);
    expect(prompts).toBeGreaterThan(TPM - each - completions);
    // The overshoot (prompts + completions above the TPM) is at most the admitted completions.
    const overshoot = Math.max(0, prompts + completions - TPM);
    expect(overshoot).toBeLessThanOrEqual(completions);
    console.log(
      `TPM ${TPM}: ${ok.length} admitted, ${prompts} prompt + ${completions} completion tokens, overshoot ${overshoot}`,
    );
    // Answers carry what is left of the TPM after their prompt, as OpenAI's headers do.
    for (const r of ok) expect(Number(r.remainingTokens)).toBeLessThanOrEqual(TPM - each);
    expect(refused[0]?.error?.code).toBe("token_rate_limit_exceeded");
    expect(refused[0]?.error?.type).toBe("tokens");
    expect(Number(refused[0]?.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(refused[0]?.retryAfter)).toBeLessThanOrEqual(60);
  });
});

const budgetOf = async (gw: RunningGateway) =>
  (
    (await (await fetch(`${gw.internalUrl}/internal/v1/budget?channel=${ns}/budget`)).json()) as {
      budget: { spent: number; tokens: number; resetsAt: string };
    }
  ).budget;

async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  let v = await read();
  for (let i = 0; i < 80 && !ok(v); i++) {
    await new Promise((r) => setTimeout(r, 50));
    v = await read();
  }
  return v;
}

describe("budget", () => {
  it("refuses with 429 budget_exhausted and Retry-After to the next period once spent; the spend is readable", async () => {
    const answered: Outcome[] = [];
    let last: Outcome | undefined;
    for (let i = 0; i < 20; i++) {
      last = await post(i % 2 === 0 ? a.url : b.url, keys.budget as string, "short question");
      if (last.status !== 200) break;
      answered.push(last);
      // The spend is written when the answer ends: let it land before the next request.
      const total = sum(answered.map((r) => (r.usage?.prompt_tokens ?? 0) + (r.usage?.completion_tokens ?? 0)));
      await eventually(
        () => budgetOf(a),
        (s) => s.spent === total,
      );
    }
    expect(last?.status).toBe(429);
    expect(last?.error).toMatchObject({ code: "budget_exhausted", type: "insufficient_quota" });
    const nextMidnight = new Date();
    nextMidnight.setUTCHours(24, 0, 0, 0);
    const expected = (nextMidnight.getTime() - Date.now()) / 1000;
    expect(Math.abs(Number(last?.retryAfter) - expected)).toBeLessThan(5);
    const spend = await budgetOf(b);
    const total = sum(answered.map((r) => (r.usage?.prompt_tokens ?? 0) + (r.usage?.completion_tokens ?? 0)));
    expect(spend).toMatchObject({ spent: total, tokens: BUDGET, resetsAt: nextMidnight.toISOString() });
    expect(spend.spent).toBeGreaterThanOrEqual(BUDGET);
    // What the operator puts in the channel's status: the same reading, through its client.
    expect(await new HttpGatewayUsage(() => a.internalUrl).budget(`${ns}/budget`)).toEqual(spend);
  });
});

describe("a stream cut short", () => {
  it("still counts: its prompt and what was sent go to the budget, with the gateway's tokenizer", async () => {
    const r = await fetch(`${a.url}/api/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${keys.cut}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "m",
        stream: true,
        messages: [{ role: "user", content: "one two three four five" }],
      }),
    });
    const text = await r.text();
    expect(text).toContain("echo: ");
    expect(text).not.toContain("[DONE]");
    const spend = await eventually(
      async () =>
        (
          (await (await fetch(`${a.internalUrl}/internal/v1/budget?channel=${ns}/cut`)).json()) as {
            budget: { spent: number };
          }
        ).budget,
      (s) => s.spent > 0,
    );
    // More than the prompt alone (its user message counts 3 + 1 + 5 tokens, and 3 to prime the reply).
    expect(spend.spent).toBeGreaterThan(12);
  });
});

describe("usage", () => {
  it("of a channel without limits is written within a second or two, counted by a replica that did not serve it", async () => {
    const answers = [await post(a.url, keys.plain as string, "one"), await post(a.url, keys.plain as string, "two")];
    const tokens = sum(answers.map((r) => (r.usage?.prompt_tokens ?? 0) + (r.usage?.completion_tokens ?? 0)));
    const read = async () =>
      (
        (await (await fetch(`${b.internalUrl}/internal/v1/usage?namespace=${ns}&channel=plain&hours=1`)).json()) as {
          usage: Array<{ prompt: number; completion: number; requests: number }>;
        }
      ).usage;
    const rows = await eventually(read, (r) => sum(r.map((x) => x.requests)) === 2);
    expect(sum(rows.map((x) => x.requests))).toBe(2);
    expect(sum(rows.map((x) => x.prompt + x.completion))).toBe(tokens);
  });

  it("is kept per hour, channel, agent, upstream and model in Redis, with the cost of the Agent's prices", async () => {
    const res = (await (await fetch(`${b.internalUrl}/internal/v1/usage?namespace=${ns}&hours=2`)).json()) as {
      usage: Array<{
        channel: string;
        agent: string;
        upstream: string;
        model: string;
        prompt: number;
        completion: number;
        requests: number;
        cost?: { amount: number; currency: string };
      }>;
    };
    const budget = res.usage.filter((r) => r.channel === `${ns}/budget`);
    expect(budget.length).toBeGreaterThanOrEqual(1);
    const requests = sum(budget.map((r) => r.requests));
    expect(requests).toBeGreaterThanOrEqual(2);
    const spend = await budgetOf(a);
    // Answered requests are in the usage and the budget alike; refused ones in neither.
    expect(sum(budget.map((r) => r.prompt + r.completion))).toBe(spend.spent);
    expect(budget[0]).toMatchObject({ agent: "counted", upstream: "u0", model: "no-usage" });
    const row = budget[0] as (typeof budget)[number];
    expect(row.cost).toEqual({
      amount: Math.round(((row.prompt * 2.5 + row.completion * 10) / 1e6) * 1e6) / 1e6,
      currency: "USD",
    });
  });
});
