// High-cardinality traffic must not grow the histograms: 1,010 chat channels (each a request and a
// 429 from its own QPM limit) and 1,000 search keys (a search each) leave the number of histogram
// series where 10 channels and 10 keys left it, no histogram carries a label outside the bounded
// allow-list, and the per-channel counters stop at the channel cap (later channels are "other").
import { createRegistry, generateKey, type Registry } from "@capstan/shared";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../gateway/fake-openai.ts";
import { addResources, emptyView, type RunningGateway, startGateway, uniqueNamespace } from "../gateway/helpers.ts";
import { HANDBOOK } from "../search/corpus.ts";
import { call, ingest, knowledgeBase, type Running, searchKey, startSearch } from "../search/helpers.ts";
import { histogramSeriesCount, parseSeries, unboundedHistogramLabels } from "./exposition.ts";

const CHANNELS = 1010;
const KEYS = 1000;
const FIRST = 10;
// Node's runtime histograms (nodejs_gc_duration_seconds{kind}) gain series with time, not traffic;
// the gateway's GenAI histograms (gen_ai_*) are traffic's.
const CAPSTAN = /^(capstan_|gen_ai_)/;

let fake: FakeOpenAI;
let gw: RunningGateway;
let gwRegistry: Registry;
let search: Running;
let channelKeys: string[];
const searchKeys: string[] = [];
const ns = uniqueNamespace("card");

beforeAll(async () => {
  fake = await startFakeOpenAI();
  const view = emptyView();
  const names = Array.from({ length: CHANNELS }, (_, i) => `c${i}`);
  const keys = addResources(
    view,
    ns,
    names.map((name) => ({ name, agent: "echo", qpm: 1 })),
    [{ name: "echo", spec: { provider: { baseURL: fake.baseURL, model: "echo", maxRetries: 0 } } }],
  );
  channelKeys = names.map((n) => keys[n] as string);
  gwRegistry = createRegistry({ defaultMetrics: false });
  gw = await startGateway({ redisUrl: inject("redisUrl") }, { view, registry: gwRegistry });

  const suffix = `${process.pid}-${Date.now().toString(36)}`;
  for (let i = 0; i < KEYS; i++) searchKeys.push(`cap_srch_card${i}_${suffix}`);
  search = await startSearch({
    kbs: [knowledgeBase("handbook")],
    keys: searchKeys.map((k, i) => searchKey(`card-${i}-${suffix}`, k, { knowledgeIds: ["kb_handbook"] })),
  });
  await ingest(search.internalUrl, "kb_handbook", HANDBOOK.slice(0, 2));
}, 120_000);

afterAll(async () => {
  await gw?.close();
  await search?.close();
  await fake?.close();
});

async function chat(key: string, stream: boolean): Promise<number> {
  const res = await gw.app.inject({
    method: "POST",
    url: "/api/v1/chat/completions",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    payload: { model: "echo", stream, messages: [{ role: "user", content: "hi" }] },
  });
  return res.statusCode;
}

async function chatTraffic(from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) {
    const key = channelKeys[i] as string;
    expect(await chat(key, i % 2 === 0)).toBe(200);
    expect(await chat(key, false)).toBe(429);
  }
  // A key that is no channel's: auth failures carry a reason, never the key.
  expect(await chat(generateKey("chat"), false)).toBe(401);
}

async function searchTraffic(from: number, to: number): Promise<void> {
  const body = { knowledgeIds: ["kb_handbook"], text: "vacation days", minSimilarity: 0 };
  for (let i = from; i < to; i++) {
    expect((await call(search.url, "/v1/rag/search", { token: searchKeys[i] as string, body })).status).toBe(200);
  }
}

const gatewayText = () => gwRegistry.metrics();
const searchText = async () => (await fetch(`${search.internalUrl}/metrics`)).text();

describe("metric cardinality under 1,000 channels and keys", () => {
  it("keeps histogram series flat and their labels bounded", async () => {
    await chatTraffic(0, FIRST);
    await searchTraffic(0, FIRST);
    await searchText(); // its own GET /metrics series exists from the second read on
    const before = {
      gateway: histogramSeriesCount(await gatewayText(), CAPSTAN),
      search: histogramSeriesCount(await searchText(), CAPSTAN),
    };
    expect(before.gateway).toBeGreaterThan(0);
    expect(before.search).toBeGreaterThan(0);

    await chatTraffic(FIRST, CHANNELS);
    await searchTraffic(FIRST, KEYS);
    const after = {
      gateway: histogramSeriesCount(await gatewayText(), CAPSTAN),
      search: histogramSeriesCount(await searchText(), CAPSTAN),
    };
    expect(after).toEqual(before);
    expect(unboundedHistogramLabels(await gatewayText())).toEqual([]);
    expect(unboundedHistogramLabels(await searchText())).toEqual([]);
  }, 600_000);

  it("caps the channel label of per-channel counters, the rest counted as other", async () => {
    const series = parseSeries(await gatewayText()).filter((s) => s.name === "capstan_gateway_channel_requests_total");
    const channels = new Set(series.map((s) => s.labels.channel));
    expect(channels.size).toBe(1001);
    expect(channels.has("other")).toBe(true);
    const other = series.filter((s) => s.labels.channel === "other").map((s) => s.labels.status);
    expect(other.sort()).toEqual(["200", "429"]);
    const rejected = parseSeries(await gatewayText()).filter(
      (s) => s.name === "capstan_gateway_limiter_rejections_total",
    );
    expect(new Set(rejected.map((s) => s.labels.channel)).size).toBe(1001);
  });
});
