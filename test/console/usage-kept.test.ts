// Usage and routing state end to end on the test ground's API server: a real gateway (watching
// the namespace, Redis for limits and usage), a real operator reading the gateway's internal API,
// a real console. An Agent with two upstreams (the first failing) and a channel with a small
// budget: the Agent's status.upstreams shows the first upstream's breaker open, the channel's
// status.budget the spend with BudgetWarning True (BudgetExhausted) once the budget is gone, and
// the console's usage API the hourly tokens per agent, upstream and model with their cost, for a
// viewer who may list the channel.
import { KubeSource, ResourceView } from "@capstan/shared/resource-view";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Operator } from "../../operator/src/manager.ts";
import { type FakeOpenAI, startFakeOpenAI } from "../gateway/fake-openai.ts";
import { client, type RunningGateway, startGateway, uniqueNamespace } from "../gateway/helpers.ts";
import { launchChromium } from "../ground/chromium.ts";
import { signIn, tokenWithRoles } from "../ground/console-users.ts";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import { CAP, create, eventually, get, startOperatorFor, whenCondition } from "../operator/helpers.ts";
import { type RunningConsole, startConsole } from "./helpers.ts";

const ns = uniqueNamespace("kept");
let admin: TestKube;
let fake: FakeOpenAI;
let source: KubeSource;
let gateway: RunningGateway;
let operator: Operator;
let consoleApp: RunningConsole;
let chatKey: string;

beforeAll(async () => {
  admin = harnessKubeClient();
  await installCrds(admin);
  await ensureNamespace(admin, ns);
  fake = await startFakeOpenAI();
  const view = new ResourceView();
  source = new KubeSource(view, admin, { namespace: ns, kinds: ["AccessChannel", "Agent"] });
  await source.start();
  gateway = await startGateway({ redisUrl: inject("redisUrl") }, { view });
  operator = startOperatorFor(inject("kubeconfig"), ns, {
    gateway: { publicUrl: gateway.url, internalUrl: gateway.internalUrl, usageRefreshMs: 300 },
  });
  await operator.start();
  await create(admin, {
    apiVersion: CAP,
    kind: "Agent",
    metadata: { name: "pair", namespace: ns },
    spec: {
      upstreams: [
        { name: "down", baseURL: fake.baseURL, model: "status:503" },
        { name: "up", baseURL: fake.baseURL, model: "echo" },
      ],
      routing: { breakerFailures: 1, breakerOpenSeconds: 600 },
      prices: [{ model: "echo", promptPerMillion: 3, completionPerMillion: 15, currency: "EUR" }],
    },
  });
  await create(admin, {
    apiVersion: CAP,
    kind: "AccessChannel",
    metadata: { name: "metered", namespace: ns },
    spec: {
      channelName: "metered",
      agentRef: { name: "pair" },
      budget: { tokens: 40, period: "month", warnPercent: 50 },
    },
  });
  await whenCondition(admin, "AccessChannel", ns, "metered", "Ready", "True");
  const secret = await get(admin, "v1", "Secret", ns, "metered-chat-key");
  chatKey = Buffer.from(String(secret?.data?.key), "base64").toString("utf8");
  // The gateway sees the channel's key hash through its watch.
  await eventually("the gateway to know the key", async () => {
    const r = await fetch(`${gateway.url}/api/v1/models`, { headers: { authorization: `Bearer ${chatKey}` } });
    return r.status === 200 ? true : undefined;
  });
  consoleApp = await startConsole(inject("kubeconfig"), {
    defaultNamespace: ns,
    gatewayMetricsUrls: [`${gateway.internalUrl}/metrics`],
  });
}, 120_000);

afterAll(async () => {
  await consoleApp?.close();
  await gateway?.close();
  source?.stop();
  await operator?.stop();
  await fake?.close();
});

describe("status and usage from the gateway", () => {
  it("the breaker in the Agent's status, the budget's spend and warning in the channel's, the usage on the console", async () => {
    const sdk = client(gateway.url, chatKey);
    let refused: unknown;
    for (let i = 0; i < 10 && !refused; i++) {
      await sdk.chat.completions
        .create({ model: "m", messages: [{ role: "user", content: "count these tokens please" }] })
        .catch((e: unknown) => {
          refused = e;
        });
    }
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    expect((refused as InstanceType<typeof OpenAI.APIError>).code).toBe("budget_exhausted");

    const channel = await whenCondition(
      admin,
      "AccessChannel",
      ns,
      "metered",
      "BudgetWarning",
      "True",
      "BudgetExhausted",
    );
    const budget = (channel.status as { budget?: { spent: number; tokens: number } }).budget;
    expect(budget?.tokens).toBe(40);
    expect(budget?.spent).toBeGreaterThanOrEqual(40);

    const agent = await eventually("the Agent's status.upstreams", async () => {
      const a = await get(admin, CAP, "Agent", ns, "pair");
      const ups = (a?.status as { upstreams?: Array<{ name: string; circuit: string }> } | undefined)?.upstreams;
      return ups?.find((u) => u.name === "down")?.circuit === "open" ? ups : undefined;
    });
    expect(agent).toEqual([
      expect.objectContaining({ name: "down", model: "status:503", circuit: "open" }),
      expect.objectContaining({ name: "up", model: "echo", circuit: "closed" }),
    ]);

    const viewer = await tokenWithRoles(admin, ns, "usage-kept-viewer", ["viewer"]);
    const session = await fetch(`${consoleApp.url}/api/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: viewer }),
    });
    expect(session.status).toBe(200);
    const cookie = (session.headers.get("set-cookie") ?? "").split(";")[0] as string;
    const res = await fetch(`${consoleApp.url}/api/namespaces/${ns}/usage/hourly?hours=2`, { headers: { cookie } });
    expect(res.status).toBe(200);
    const { rows } = (await res.json()) as {
      rows: Array<{
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
    expect(rows).toHaveLength(1);
    const row = rows[0] as (typeof rows)[number];
    expect(row).toMatchObject({ channel: "metered", agent: "pair", upstream: "up", model: "echo" });
    expect(row.prompt + row.completion).toBe(budget?.spent);
    expect(row.cost).toEqual({ amount: Math.round(row.prompt * 3 + row.completion * 15) / 1e6, currency: "EUR" });

    // The usage page, as the viewer sees it in a browser.
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await signIn(page, consoleApp.url, viewer);
      await page.goto(`${consoleApp.url}/#/usage`);
      const cells = page.getByTestId("kept-metered-up").locator("td");
      await cells.first().waitFor();
      const texts = await cells.allTextContents();
      expect(texts.slice(0, 5)).toEqual(["pair", "up", "echo", String(row.requests), String(row.prompt)]);
      expect(texts[6]).toBe(`${row.cost?.amount.toFixed(4)} EUR`);
    } finally {
      await browser.close();
    }
  });
});
