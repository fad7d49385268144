// Two tenants try to reach the platform's internals over the network, on the real node with the
// chart installed by its defaults and NetworkPolicies enforced by the node's kube-network-policies:
// a pod in a tenant namespace calls the release's Services (internal ports, Redis, search's public
// port with a forged X-Forwarded-For) and another namespace's Scraper, and a client spells internal
// paths and sends oversized and malformed bodies through the ingress. Each attempt is recorded with
// what was expected and what was seen; the suite prints the table docs/security.md carries. The
// write side (admission, egress, knowledge) is test/e2e/hostile-writes.test.ts.
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { brief, clients, Ledger, viaIngress } from "./support/hostile.ts";
import { type Stage, stage } from "./support/hostile-world.ts";
import { DEMO_NS, SYSTEM_NS } from "./support/platform.ts";
import type { Seen } from "./support/prober.ts";

let ctx: Stage;
const ledger = new Ledger();
let chat: ReturnType<typeof clients>["chat"];
let search: ReturnType<typeof clients>["search"];

beforeAll(async () => {
  ctx = await stage();
  ({ chat, search } = clients(ctx.ca));
}, 900_000);

afterAll(() => {
  console.log(`[e2e] hostile tenants, over the network (${ledger.rows.length} attempts):\n${ledger.table()}`);
  if (ctx?.home) rmSync(ctx.home, { recursive: true, force: true });
});

describe("the platform's internals from a tenant's pod", () => {
  const svc = (name: string, ns = SYSTEM_NS) => `${name}.${ns}.svc.cluster.local`;
  const noConnection = (s: { error?: string; connected?: boolean }) => s.error !== undefined && !s.connected;

  it.each([
    [
      "search internal port: documents API",
      svc("capstan-search"),
      8091,
      "/internal/v1/knowledge-bases/kb_shared/documents",
    ],
    ["search internal port: /metrics", svc("capstan-search"), 8091, "/metrics"],
    ["gateway internal port: /metrics", svc("capstan-gateway"), 8090, "/metrics"],
    ["operator metrics port", svc("capstan-operator-metrics"), 8080, "/metrics"],
  ])("reaches %s", async (what, host, port, path) => {
    const s = await ctx.w.proberB.http({ host, port, path });
    ledger.held(`tenant pod → ${what}`, "no connection (NetworkPolicy)", brief(s), noConnection(s));
  });

  it("talks to the platform's Redis", async () => {
    const s = await ctx.w.proberB.tcp({ host: svc("capstan-redis"), port: 6379, send: "PING\r\n" });
    ledger.held(
      "tenant pod → Redis PING",
      "no connection (NetworkPolicy)",
      s.connected ? `connected, answered ${JSON.stringify(s.data ?? "")}` : `no connection (${s.error})`,
      noConnection(s),
    );
  });

  it("calls another namespace's Scraper without its key, on its API and admin ports", async () => {
    const body = JSON.stringify({ url: "http://example.invalid/" });
    const headers = { "content-type": "application/json" };
    const api = await ctx.w.proberB.http({
      host: svc("web", DEMO_NS),
      port: 3002,
      path: "/scrape",
      method: "POST",
      headers,
      body,
    });
    const admin = await ctx.w.proberB.http({
      host: svc("web", DEMO_NS),
      port: 3003,
      path: "/scrape",
      method: "POST",
      headers,
      body,
    });
    ledger.held(
      "tenant pod → capstan-demo's Scraper /scrape, no key (3002, 3003)",
      "401, 404",
      `${brief(api, 40)}; ${brief(admin, 40)}`,
      api.status === 401 && admin.status === 404,
    );
  });

  it("calls search's public Service directly with a forged X-Forwarded-For", async () => {
    const s: Seen = await ctx.w.proberB.http({
      host: svc("capstan-search"),
      port: 80,
      path: "/v1/rag/search",
      method: "POST",
      headers: {
        authorization: `Bearer ${ctx.w.keys.officeOnly}`,
        "content-type": "application/json",
        "x-forwarded-for": "203.0.113.7",
      },
      body: JSON.stringify({ text: "vault", knowledgeIds: ["kb_shared"] }),
    });
    ledger.held(
      "tenant pod → search :80 with forged X-Forwarded-For",
      "no connection (only the ingress may call it)",
      brief(s, 60),
      noConnection(s),
    );
  });

  it("spells the gateway's metrics path on its public Service", async () => {
    const seen: string[] = [];
    for (const path of ["/%6detrics", "/./metrics", "//metrics", "/api/v1/../../metrics", "/METRICS"]) {
      const s = await ctx.w.proberB.http({ host: svc("capstan-gateway"), port: 80, path });
      seen.push(`${path} ${s.status ?? s.error}`);
      if (s.status !== 404 || s.body?.includes("# HELP")) break;
    }
    const held = seen.length === 5 && seen.every((x) => x.endsWith(" 404"));
    ledger.held("tenant pod → gateway :80 encoded/dot-segment /metrics", "404 each", seen.join(", "), held);
  });
});

describe("through the ingress", () => {
  it("spells internal paths through the ingress", async () => {
    const seen: string[] = [];
    for (const path of [
      "/%6detrics",
      "/%69nternal/v1/knowledge-bases/kb_shared/documents",
      "/./metrics",
      "//metrics",
      "/v1/../metrics",
      "/%2e%2e/metrics",
      "/healthz",
    ]) {
      const r = await viaIngress(ctx.ca, path);
      seen.push(`${path} ${r.status}`);
      if (r.body.includes("# HELP") || (r.status >= 200 && r.status < 300)) break;
    }
    const held = seen.length === 7 && seen.every((x) => /\s4\d\d$/.test(x));
    ledger.held(
      "encoded and dot-segment internal paths via the ingress",
      "4xx each, no metrics",
      seen.join(", "),
      held,
    );
  });

  it("sends a chat body over the gateway's limit", async () => {
    const big = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(5 * 1024 * 1024) }] });
    const r = await chat(ctx.w.keys.chatA, big);
    ledger.held(
      "5 MiB chat body",
      "413 OpenAI error object",
      brief(r, 60),
      r.status === 413 && r.body.includes('"error"'),
    );
  });

  it("sends a search body over search's limit", async () => {
    const r = await search(
      ctx.w.keys.searchB,
      JSON.stringify({ text: "x".repeat(2 * 1024 * 1024), knowledgeIds: ["kb_shared"] }),
    );
    ledger.held(
      "2 MiB search body",
      "413 {code,message,data}",
      brief(r, 60),
      r.status === 413 && r.body.includes('"code"'),
    );
  });

  it("sends malformed JSON to chat and search", async () => {
    const c = await chat(ctx.w.keys.chatA, '{"model": "m", "messages": [');
    const s = await search(ctx.w.keys.searchB, '{"text": ');
    ledger.held(
      "malformed JSON to chat; to search",
      "400 error object; 400 envelope",
      `${brief(c, 40)}; ${brief(s, 40)}`,
      c.status === 400 && c.body.includes('"error"') && s.status === 400 && s.body.includes('"code"'),
    );
  });
});

describe("the suite itself", () => {
  it("tried at least 10 ways across the network, and every one held", () => {
    expect(ledger.rows.length).toBeGreaterThanOrEqual(10);
    expect(ledger.rows.filter((r) => !r.held).map((r) => r.attempt)).toEqual([]);
  });
});
