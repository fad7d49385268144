// A refresh keeps what it cannot replace: a KnowledgeBase with an inline source and a page fetched
// through a real scraper (Chromium) is ingested, then the scraper is stopped and a refresh runs.
// Every previous document stays searchable, the status names the failed source (Degraded), and
// the source is retried with backoff; only a source removed from the spec loses its documents.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import { type Site, startSite } from "../scraper/helpers.ts";
import { CAP, condition, create, eventually, get, type Obj, patch, whenCondition } from "./helpers.ts";
import { type ScrapingStack, startScrapingStack } from "./served-search.ts";

const ns = `refresh-${process.pid}-${Date.now().toString(36)}`;
const TOKEN = "refresh-keeps-test-token-0123456789";
const PAGE = "The launch checklist says the rocket's call sign is Falcon Nine and fuelling starts at dawn.";
const INLINE = "Inline note: the mission patch is blue with three stars.";

let client: TestKube;
let site: Site;
let stack: ScrapingStack;

async function texts(): Promise<string[]> {
  // The internal token searches on search's internal port only.
  const res = await fetch(`${stack.search.internalUrl}/v1/rag/search`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}`, "x-capstan-namespace": ns },
    body: JSON.stringify({ knowledgeIds: ["kb_mission"], text: "call sign and mission patch", minSimilarity: 0 }),
  });
  const body = (await res.json()) as { data: { text: string }[] | null };
  return (body.data ?? []).map((h) => h.text).sort();
}

beforeAll(async () => {
  client = harnessKubeClient();
  await installCrds(client);
  await ensureNamespace(client, ns);
  site = await startSite();
  site.route(
    "/checklist",
    `<html><head><title>Checklist</title></head><body><main><p>${PAGE}</p></main></body></html>`,
  );
  stack = await startScrapingStack(client, ns, TOKEN, site, inject("kubeconfig"));
}, 300_000);

afterAll(async () => {
  await stack?.close();
  await site?.close();
});

describe("a refresh while the scraper is stopped", () => {
  it("keeps every previous document searchable and names the failed source in status", async () => {
    await create(client, {
      apiVersion: CAP,
      kind: "KnowledgeBase",
      metadata: { name: "mission", namespace: ns },
      spec: {
        sources: [
          { name: "Checklist", url: `${site.origin}/checklist` },
          { name: "Note", text: INLINE },
        ],
      },
    });
    const first = await whenCondition(client, "KnowledgeBase", ns, "mission", "Ingested", "True");
    expect(first.status).toMatchObject({ documents: 2, failures: 0 });
    expect(
      await eventually("both documents searchable", async () => ((await texts()).length === 2 ? texts() : false)),
    ).toEqual([INLINE, PAGE].sort());

    await stack.stopScraper();
    // A spec change refreshes at once.
    await patch(
      client,
      { apiVersion: CAP, kind: "KnowledgeBase", ns, name: "mission" },
      { spec: { description: "v2" } },
    );
    const after = await eventually("the refresh with the scraper down", async () => {
      const kb = (await get(client, CAP, "KnowledgeBase", ns, "mission")) as Obj;
      return kb.status?.observedGeneration === kb.metadata.generation && condition(kb, "Degraded")?.status === "True"
        ? kb
        : undefined;
    });
    expect(condition(after, "Degraded")).toMatchObject({ reason: "SourcesFailed" });
    expect(condition(after, "Degraded")?.message).toContain("Checklist");
    expect(condition(after, "Ready")).toMatchObject({ status: "True", reason: "PartiallyIngested" });
    expect(after.status).toMatchObject({ documents: 2, failures: 1, failedSources: ["Checklist"] });
    expect(await texts()).toEqual([INLINE, PAGE].sort());

    // Removing the failed source from the spec is what deletes its document.
    await patch(
      client,
      { apiVersion: CAP, kind: "KnowledgeBase", ns, name: "mission" },
      { spec: { sources: [{ name: "Note", text: INLINE }] } },
    );
    await eventually("the removed source's document deleted", async () => {
      const t = await texts();
      return t.length === 1 && t[0] === INLINE;
    });
    const clean = await whenCondition(client, "KnowledgeBase", ns, "mission", "Degraded", "False");
    expect(clean.status).toMatchObject({ documents: 1, failures: 0 });
  });
});
