// RAG and extractive agents end to end with the real search service (@capstan/search: real local
// embedding model, embedded vector store) over loopback HTTP, the gateway calling it with the
// internal service token.

import { readFileSync } from "node:fs";
import { buildApp as buildSearchApp } from "@capstan/search";
import { listenInternal } from "@capstan/shared";
import type { KnowledgeBase } from "@capstan/shared/api";
import { ResourceView } from "@capstan/shared/resource-view";
import type { FastifyInstance } from "fastify";
import type OpenAI from "openai";
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

const INTERNAL_TOKEN = "gateway-test-internal-token-0123456789";
const KB = "kb_gateway_docs";
const DOCS = [
  {
    docsId: "rate-limits",
    docsName: "Rate limits",
    text:
      "Every access channel has a rate limit in requests per minute, called QPM. The default QPM is 100. " +
      "Requests over the limit are rejected with HTTP 429 and a Retry-After header telling the client how many seconds to wait.",
  },
  {
    docsId: "keys",
    docsName: "Keys and expiry",
    text:
      "Chat keys are issued per access channel and stored in a Kubernetes Secret. " +
      "A key past its expiry time is rejected with HTTP 401.",
  },
  {
    docsId: "gardening",
    docsName: "Gardening",
    text: "Tomatoes need full sun and regular watering. Prune the side shoots to keep the plant productive.",
  },
];

let search: FastifyInstance;
/** The documents API: search's internal port. */
let searchInternalUrl: string;
let fake: FakeOpenAI;
let gw: RunningGateway;
let badTokenGw: RunningGateway;
let keys: Record<string, string>;
const ns = uniqueNamespace("kb");
const view = emptyView();

async function internal(method: string, path: string, body: unknown) {
  const res = await fetch(`${searchInternalUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
}

beforeAll(async () => {
  const searchView = new ResourceView();
  const kb: KnowledgeBase = {
    apiVersion: "capstan.dev/v1alpha1",
    kind: "KnowledgeBase",
    metadata: { name: "gateway-docs", namespace: ns },
    spec: {
      knowledgeId: KB,
      embedding: { provider: "local", model: "all-MiniLM-L6-v2" },
      chunking: { size: 800, overlap: 100 },
      sources: [],
      refreshInterval: "24h",
    },
  };
  searchView.replace("KnowledgeBase", [kb]);
  searchView.replace("SearchKey", []);
  search = await buildSearchApp({ internalToken: INTERNAL_TOKEN, logLevel: "warn" }, { view: searchView });
  await search.listen({ port: 0, host: "127.0.0.1" });
  const internalAddr = (await listenInternal(search, { port: 0, host: "127.0.0.1" })).address();
  searchInternalUrl = `http://127.0.0.1:${typeof internalAddr === "object" && internalAddr ? internalAddr.port : 0}`;
  await internal("PUT", `/internal/v1/namespaces/${ns}/knowledge-bases/${KB}`, {});
  for (const d of DOCS) {
    await internal("PUT", `/internal/v1/namespaces/${ns}/knowledge-bases/${KB}/documents/${d.docsId}`, {
      docsName: d.docsName,
      text: d.text,
    });
  }

  fake = await startFakeOpenAI();
  const knowledge = (citations: string) => ({ knowledgeIds: [KB], maxResults: 2, minSimilarity: 0.2, citations });
  keys = addResources(
    view,
    ns,
    [
      { name: "extractive", agent: "extractive" },
      { name: "extractive-append", agent: "extractive-append" },
      { name: "rag", agent: "rag" },
      { name: "rag-append", agent: "rag-append" },
    ],
    [
      { name: "extractive", spec: { knowledge: knowledge("field") } },
      { name: "extractive-append", spec: { knowledge: knowledge("append") } },
      { name: "rag", spec: { provider: { baseURL: fake.baseURL, model: "echo" }, knowledge: knowledge("field") } },
      {
        name: "rag-append",
        spec: { provider: { baseURL: fake.baseURL, model: "echo" }, knowledge: knowledge("append") },
      },
    ],
  );
  // Retrieval with the internal token: search's internal port, the only one that accepts it.
  const search_ = { url: searchInternalUrl, internalToken: INTERNAL_TOKEN, timeoutMs: 60_000 };
  gw = await startGateway({ redisUrl: inject("redisUrl"), search: search_ }, { view });
  badTokenGw = await startGateway(
    { redisUrl: inject("redisUrl"), search: { ...search_, internalToken: "wrong-token-wrong-token" } },
    { view },
  );
}, 300_000);

afterAll(async () => {
  await Promise.allSettled([gw?.close(), badTokenGw?.close(), fake?.close()]);
  await search?.close();
});

const question = "What is the default QPM rate limit of a channel?";
type WithCitations = { citations?: Array<{ index: number; knowledgeId: string; docsId: string; docsName: string }> };

describe("extractive agent (no provider)", () => {
  it("answers from the best passages with citations in a field, usage counted by the tokenizer", async () => {
    const res = await client(gw.url, keys.extractive as string).chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: question }],
    });
    const content = res.choices[0]?.message.content ?? "";
    expect(content).toContain("The default QPM is 100.");
    expect(content).toContain("[1]");
    expect(content).not.toContain("Tomatoes");
    const citations = (res as unknown as WithCitations).citations ?? [];
    expect(citations[0]).toMatchObject({ index: 1, knowledgeId: KB, docsId: "rate-limits", docsName: "Rate limits" });
    expect(res.usage?.completion_tokens).toBeGreaterThan(5);
    expect(res.usage?.prompt_tokens).toBeGreaterThan(10);
    expect(
      await metricValue(gw.url, "capstan_gateway_outbound_requests_total", { target: "search", outcome: "ok" }),
    ).toBeGreaterThan(0);
  });

  it("streams the same answer, citations on the final chunk", async () => {
    const stream = await client(gw.url, keys.extractive as string).chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: question }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: Array<OpenAI.Chat.Completions.ChatCompletionChunk & WithCitations> = [];
    for await (const c of stream) chunks.push(c);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(text).toContain("The default QPM is 100.");
    expect(chunks[0]?.choices[0]?.delta.role).toBe("assistant");
    const final = chunks.find((c) => c.choices[0]?.finish_reason === "stop");
    expect(final?.citations?.[0]?.docsId).toBe("rate-limits");
    expect(chunks.at(-1)?.usage?.completion_tokens).toBeGreaterThan(5);
  });

  it("appends a references list when citations are 'append'", async () => {
    const res = await client(gw.url, keys["extractive-append"] as string).chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "When is a chat key rejected with 401?" }],
    });
    const content = res.choices[0]?.message.content ?? "";
    expect(content).toContain("expiry");
    expect(content).toMatch(/References:\n\[1\] Keys and expiry \(kb_gateway_docs, keys\)/);
    expect(res).not.toHaveProperty("citations");
  });
});

describe("RAG agent", () => {
  it("puts the retrieved passages in the provider prompt and returns citations", async () => {
    const res = await client(gw.url, keys.rag as string).chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: question }],
    });
    expect(res.choices[0]?.message.content).toBe(`echo: ${question}`);
    const sent = fake.calls.at(-1)?.body.messages ?? [];
    expect(sent[0]?.role).toBe("system");
    expect(String(sent[0]?.content)).toContain("[1] Rate limits (kb_gateway_docs)");
    expect(String(sent[0]?.content)).toContain("The default QPM is 100.");
    expect(sent.at(-1)).toEqual({ role: "user", content: question });
    expect((res as unknown as WithCitations).citations?.[0]?.docsId).toBe("rate-limits");
  });

  it("appends references to a streamed answer", async () => {
    const stream = await client(gw.url, keys["rag-append"] as string).chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: question }],
      stream: true,
    });
    let text = "";
    for await (const c of stream) text += c.choices[0]?.delta.content ?? "";
    expect(text.startsWith(`echo: ${question}`)).toBe(true);
    expect(text).toContain("References:\n[1] Rate limits");
  });

  it("answers 502 knowledge_unavailable when the search service refuses the internal token", async () => {
    const before = fake.calls.length;
    const err = await client(badTokenGw.url, keys.rag as string)
      .chat.completions.create({ model: "m", messages: [{ role: "user", content: question }] })
      .catch((e) => e);
    expect(err.status).toBe(502);
    expect(err.code).toBe("knowledge_unavailable");
    expect(err.message).toContain("401");
    expect(fake.calls.length).toBe(before);
  });

  it("an Agent of another namespace naming the same knowledge id reaches nothing (search checks its namespace)", async () => {
    const other = uniqueNamespace("kb-other");
    const otherKeys = addResources(
      view,
      other,
      [{ name: "intruder", agent: "intruder" }],
      [
        {
          name: "intruder",
          spec: {
            provider: { baseURL: fake.baseURL, model: "echo" },
            knowledge: { knowledgeIds: [KB], maxResults: 2, minSimilarity: 0.2 },
          },
        },
      ],
    );
    const before = fake.calls.length;
    const err = await client(gw.url, otherKeys.intruder as string)
      .chat.completions.create({ model: "m", messages: [{ role: "user", content: question }] })
      .catch((e) => e);
    expect(err.status).toBe(502);
    expect(err.code).toBe("knowledge_unavailable");
    // The same 400 a key outside its scope gets, naming only the id: nothing of the other namespace.
    expect(err.message).toContain(`400: knowledge id is invalid or permissions are insufficient: ${KB}`);
    expect(err.message).not.toContain("QPM");
    expect(err.message).not.toContain(ns);
    expect(fake.calls.length).toBe(before);
  });
});

describe("the gateway's outbound metrics as the docs and alerts name them", () => {
  // docs/observability.md once pointed SREs at target="search_search", a series the gateway never
  // exports. Every `capstan_gateway_outbound_*{target="…"}` selector in the docs and the rules must
  // match series this gateway (which has called search above) really exports.
  it("finds a series for every target the docs and the rules give", async () => {
    const root = new URL("../../", import.meta.url);
    const texts = ["docs/observability.md", "charts/capstan/files/monitoring/rules.yaml"].map((f) =>
      readFileSync(new URL(f, root), "utf8"),
    );
    const selectors = texts.flatMap((t) => [...t.matchAll(/(capstan_gateway_outbound_[a-z_]+)\{target="([^"]+)"\}/g)]);
    expect(selectors.length).toBeGreaterThan(0);
    const exported = await (await fetch(`${gw.internalUrl}/metrics`)).text();
    for (const [selector, name, target] of selectors) {
      const series = exported
        .split("\n")
        .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name}_bucket{`) || l.startsWith(`${name}_count{`));
      expect(
        series.some((l) => l.includes(`target="${target}"`)),
        `${selector} matches no exported series`,
      ).toBe(true);
    }
  });
});
