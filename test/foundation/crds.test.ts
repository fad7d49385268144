// The generated CRDs on a real kube-apiserver: every example is accepted, and the API server
// itself (structural schema + CEL) rejects invalid objects with its own messages.
import { API_VERSION, KINDS, type KindName } from "@capstan/shared/api";
import { collectionPath, KubeApiError } from "@capstan/shared/kube";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureNamespace, harnessKubeClient, installCrds, rawExamples, type TestKube } from "../ground/kube-client.ts";

const NS = "crd-validation";
let client: TestKube;

beforeAll(async () => {
  client = harnessKubeClient();
  await installCrds(client);
  await ensureNamespace(client, NS);
  await ensureNamespace(client, "capstan-demo");
});

function create(kind: KindName, name: string, spec: unknown, namespace = NS) {
  return client.json(collectionPath(API_VERSION, KINDS[kind].plural, namespace), {
    method: "POST",
    query: { fieldValidation: "Strict" },
    body: { apiVersion: API_VERSION, kind, metadata: { name, namespace }, spec },
  });
}

async function rejection(kind: KindName, name: string, spec: unknown): Promise<string> {
  try {
    await create(kind, name, spec);
  } catch (err) {
    expect(err).toBeInstanceOf(KubeApiError);
    expect([400, 422]).toContain((err as KubeApiError).status);
    return (err as KubeApiError).message;
  }
  throw new Error(`the API server accepted an invalid ${kind} ${name}`);
}

describe("CRDs on a real API server", () => {
  it("accepts every object in examples/ and applies the schema defaults", async () => {
    const examples = rawExamples();
    expect(new Set(examples.map((o) => o.kind))).toEqual(new Set([...Object.keys(KINDS), "Namespace"]));
    for (const obj of examples.filter((o) => o.kind !== "Namespace")) {
      await client.json(collectionPath(API_VERSION, KINDS[obj.kind as KindName].plural, obj.metadata.namespace), {
        method: "POST",
        query: { fieldValidation: "Strict" },
        body: obj,
      });
    }
    const channel = await client.json<{ spec: { qpm: number; keepHistory: boolean } }>(
      `${collectionPath(API_VERSION, "accesschannels", "capstan-demo")}/website-chat`,
    );
    expect(channel.spec.qpm).toBe(100);
    const scraper = await client.json<{
      spec: { port: number; client: { timeoutSeconds: number; maxRetries: number } };
    }>(`${collectionPath(API_VERSION, "scrapers", "capstan-demo")}/web`);
    expect(scraper.spec.port).toBe(3002); // defaulted by the API server
    expect(scraper.spec.client).toMatchObject({ timeoutSeconds: 30, maxRetries: 3, enabled: true });
  });

  it("defaults qpm to 100 when absent", async () => {
    await create("AccessChannel", "defaults", { channelName: "x", agentRef: { name: "a" } });
    const got = await client.json<{ spec: { qpm: number; keepHistory: boolean } }>(
      `${collectionPath(API_VERSION, "accesschannels", NS)}/defaults`,
    );
    expect(got.spec).toMatchObject({ qpm: 100, keepHistory: false });
  });

  const channel = { channelName: "Support", agentRef: { name: "a" } };
  const cases: [string, KindName, unknown, RegExp][] = [
    ["zero QPM", "AccessChannel", { ...channel, qpm: 0 }, /spec\.qpm.*greater than or equal to 1/],
    ["negative QPM", "AccessChannel", { ...channel, qpm: -5 }, /spec\.qpm.*greater than or equal to 1/],
    ["missing channel name", "AccessChannel", { agentRef: { name: "a" } }, /spec\.channelName: Required value/],
    ["malformed kb_ id", "KnowledgeBase", { knowledgeId: "kb-Product Docs" }, /spec\.knowledgeId.*should match/],
    [
      "malformed kb_ id in a key scope",
      "SearchKey",
      { keyName: "k", knowledgeIds: ["docs"] },
      /spec\.knowledgeIds\[0\].*should match/,
    ],
    [
      "bad CIDR",
      "SearchKey",
      { keyName: "k", knowledgeIds: ["kb_a"], allowedCIDRs: ["10.0.0.0/33"] },
      /allowedCIDRs entries must be IP addresses or CIDRs/,
    ],
    [
      "validity window ending before it starts",
      "SearchKey",
      { keyName: "k", knowledgeIds: ["kb_a"], validFrom: "2027-01-02T00:00:00Z", validUntil: "2027-01-01T00:00:00Z" },
      /validUntil must be after validFrom/,
    ],
    [
      "rotation overlap not shorter than the period",
      "SearchKey",
      { keyName: "k", knowledgeIds: ["kb_a"], rotation: { every: "24h", overlap: "48h" } },
      /rotation.overlap must be shorter than rotation.every/,
    ],
    ["unknown field", "AccessChannel", { ...channel, qpmm: 10 }, /unknown field "spec\.qpmm"/],
    // References are checked where they are written, as Kubernetes object names.
    [
      "agentRef not an object name",
      "AccessChannel",
      { ...channel, agentRef: { name: "bad name!" } },
      /spec\.agentRef\.name.*should match/,
    ],
    [
      "scraperRef not an object name",
      "KnowledgeBase",
      { scraperRef: { name: "Web_Scraper" } },
      /spec\.scraperRef\.name.*should match/,
    ],
    [
      "secret reference not an object name",
      "SearchKey",
      { keyName: "k", knowledgeIds: ["kb_a"], keySecretRef: { name: "my secret", key: "key" } },
      /spec\.keySecretRef\.name.*should match/,
    ],
    [
      "chunk overlap not smaller than size",
      "KnowledgeBase",
      { chunking: { size: 100, overlap: 100 } },
      /chunking.overlap must be smaller than chunking.size/,
    ],
    [
      "source with two kinds of content",
      "KnowledgeBase",
      { sources: [{ name: "d", url: "https://example.com", text: "t" }] },
      /a source sets exactly one of url, text, configMap, crawl/,
    ],
    [
      "source with a url and a crawl",
      "KnowledgeBase",
      { sources: [{ name: "d", url: "https://example.com", crawl: { url: "https://example.com/docs/" } }] },
      /a source sets exactly one of url, text, configMap, crawl/,
    ],
    [
      "crawl limit above its bound",
      "KnowledgeBase",
      { sources: [{ name: "d", crawl: { url: "https://example.com/docs/", limit: 50_001 } }] },
      /spec\.sources\[0\]\.crawl\.limit.*less than or equal to 50000/,
    ],
    [
      "crawl without a start URL",
      "KnowledgeBase",
      { sources: [{ name: "d", crawl: { maxDepth: 2 } }] },
      /spec\.sources\[0\]\.crawl\.url: Required value/,
    ],
    ["unsupported log level", "Scraper", { logLevel: "verbose" }, /spec\.logLevel: Unsupported value: "verbose"/],
    [
      "expiry that is not a time",
      "AccessChannel",
      { ...channel, expiresAt: "next tuesday" },
      /spec\.expiresAt.*date-time/,
    ],
  ];

  it.each(cases)("rejects %s with the API server's own message", async (_what, kind, spec, message) => {
    const name = `invalid-${Math.random().toString(36).slice(2, 8)}`;
    expect(await rejection(kind, name, spec)).toMatch(message);
  });
});
