// The token limit's Redis-down policy, the QPM limiter's: with Redis gone (a private Redis,
// stopped), the "local" policy admits floor(TPM / replicas) tokens per replica in its own window,
// refusing the rest with token_rate_limit_exceeded; requests keep being answered meanwhile.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, startRedis } from "../ground/redis.ts";
import { addResources, emptyView, metricValue, type RunningGateway, startGateway, uniqueNamespace } from "./helpers.ts";

const TPM = 200;
const REPLICAS = 2;
let redis: RedisServer;
let gw: RunningGateway;
let key: string;
const ns = uniqueNamespace("tokdown");

beforeAll(async () => {
  redis = await startRedis();
  const view = emptyView();
  const keys = addResources(
    view,
    ns,
    [{ name: "c", agent: "offline", qpm: 100_000 }],
    [{ name: "offline", spec: { description: "no provider, no knowledge" } }],
  );
  key = keys.c as string;
  for (const c of view.list("AccessChannel").filter((c) => c.metadata.namespace === ns)) {
    c.spec.tpm = TPM;
    view.upsert(c);
  }
  gw = await startGateway(
    {
      redisUrl: redis.url,
      limiter: { redisTimeoutMs: 500, breakerFailures: 1, breakerProbeMs: 100, replicas: REPLICAS },
    },
    { view },
  );
});

afterAll(async () => {
  await gw?.close();
  await redis?.stop();
});

async function post(): Promise<{
  status: number;
  usage?: { prompt_tokens: number; completion_tokens: number };
  error?: { code: string };
}> {
  const r = await fetch(`${gw.url}/api/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "m",
      messages: [{ role: "user", content: "ten words of prompt to count against the limit" }],
    }),
  });
  return { status: r.status, ...((await r.json()) as object) };
}

describe("TPM while Redis is down", () => {
  it("local policy: this replica admits its share, floor(TPM / replicas), then 429 token_rate_limit_exceeded", async () => {
    const first = await post();
    expect(first.status).toBe(200);
    await redis.stop();
    const outcomes = [];
    for (let i = 0; i < 15; i++) outcomes.push(await post());
    const ok = outcomes.filter((o) => o.status === 200);
    const refused = outcomes.filter((o) => o.status === 429);
    expect(ok.length + refused.length).toBe(15);
    expect(ok.length).toBeGreaterThan(0);
    expect(refused[0]?.error?.code).toBe("token_rate_limit_exceeded");
    // The replica's window held everything admitted before the last request (prompts and
    // completions) plus the last one's prompt, within its share: floor(TPM / replicas), not TPM.
    const all = ok.reduce((n, o) => n + (o.usage?.prompt_tokens ?? 0) + (o.usage?.completion_tokens ?? 0), 0);
    const last = ok.at(-1)?.usage;
    const windowAtLast = all - (last?.completion_tokens ?? 0);
    expect(windowAtLast).toBeLessThanOrEqual(Math.floor(TPM / REPLICAS));
    // And the next request would not have fitted (it was refused).
    expect(all + (last?.prompt_tokens ?? 0)).toBeGreaterThan(Math.floor(TPM / REPLICAS));
    expect(await metricValue(gw.url, "capstan_gateway_limiter_backend_errors_total")).toBeGreaterThan(0);
  });
});
