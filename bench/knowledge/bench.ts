// Knowledge at scale (issue #26), through the operator: a generated loopback site of BENCH_PAGES
// pages (default 20,000) is crawled into one KnowledgeBase by the real platform (bench/knowledge/
// stack.ts: operator, search with its default local model, scraper with Chromium, each its own
// process, on a private API server). It records
//  - time to searchable: from the KnowledgeBase's creation until its refresh has ended with every
//    page in status and a search for one page's own text answers that page first, and pages/s;
//  - each process's peak RSS (operator, search, scraper, and the scraper's Chromium);
//  - a second refresh after 1 % of the pages changed: its embedding work (search's
//    capstan_search_ingested_chunks_total) must be at most 5 % of the first's. The ratio is
//    printed; above 5 % the benchmark exits 1.
// Before any figure it checks its work (bench/work.ts): the site served every page, status and
// search count every page, the second refresh embedded exactly the changed pages, and the
// KnowledgeBase's annotations stay under 2 KiB whatever the page count.
//
//   node bench/knowledge/bench.ts                     (BENCH_PAGES=20000)
//   BENCH_PAGES=2000 node bench/knowledge/bench.ts
//   node bench/knowledge/bench.ts --smoke             (200 pages)
// Env: BENCH_PAGES, BENCH_CONCURRENCY (pages the scraper renders at once, default 8),
// BENCH_TIMEOUT_S (bound of each refresh, default 3600).
import { loadavg } from "node:os";
import { expectAtLeast, expectCount, expectWork, sized, workChecked } from "../work.ts";
import { type Site, startSite } from "./site.ts";
import { type Stack, startStack } from "./stack.ts";

const PAGES = Number(process.env.BENCH_PAGES ?? sized(20_000, 200));
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_S ?? 3600) * 1000;
const MAX_RATIO = 0.05;
const KB_PATH = (ns: string) => `/apis/capstan.dev/v1alpha1/namespaces/${ns}/knowledgebases`;

interface KnowledgeBase {
  metadata: { generation?: number; annotations?: Record<string, string> };
  status?: {
    observedGeneration?: number;
    refresh?: unknown;
    documents?: number;
    failures?: number;
    progress?: string;
    conditions?: { type: string; status: string; message?: string }[];
  };
}

const log = (msg: string) => process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const seconds = (ms: number) => (ms / 1000).toFixed(1);

/** A counter of search's /metrics (summed over its labels, or those matching `labels`). */
async function searchCounter(stack: Stack, name: string, labels = ""): Promise<number> {
  const text = await (await fetch(`${stack.searchInternal}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(name) && l.includes(labels))
    .reduce((n, l) => n + Number(l.split(" ").pop()), 0);
}

/** The KnowledgeBase once the refresh of its current generation has ended (every source in, or failed). */
async function refreshEnded(stack: Stack, started: number): Promise<KnowledgeBase> {
  let lastProgress = "";
  for (;;) {
    const kb = await stack.kube.json<KnowledgeBase>(`${KB_PATH(stack.namespace)}/site`);
    const s = kb.status;
    const ingested = s?.conditions?.find((c) => c.type === "Ingested");
    if (s?.observedGeneration === kb.metadata.generation && !s?.refresh && ingested) return kb;
    if (s?.progress && s.progress !== lastProgress) {
      lastProgress = s.progress;
      log(`progress: ${s.progress} (${seconds(Date.now() - started)} s)`);
    }
    for (const p of Object.values(stack.procs)) {
      expectWork(p.child.exitCode === null, `${p.name} keeps running (it exited):\n${p.output()}`);
    }
    expectWork(Date.now() - started < TIMEOUT_MS, `the refresh to end within ${TIMEOUT_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** The top hit for page i's own text, searched as the gateway does (internal token, the namespace). */
async function topHit(stack: Stack, site: Site, i: number): Promise<string | undefined> {
  const res = await fetch(`${stack.searchInternal}/v1/rag/search`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${stack.token}`,
      "x-capstan-namespace": stack.namespace,
    },
    body: JSON.stringify({ knowledgeIds: ["kb_site"], text: site.textOf(i), maxResults: 1, minSimilarity: 0 }),
  });
  const body = (await res.json()) as { data: { text: string }[] | null };
  return body.data?.[0]?.text;
}

/** Checks a refresh ended with every page in status and in search, and the annotations small. */
async function expectAllIn(stack: Stack, site: Site, kb: KnowledgeBase): Promise<void> {
  const ingested = kb.status?.conditions?.find((c) => c.type === "Ingested");
  expectWork(ingested?.status === "True", `the refresh ingested every source (${ingested?.message})`);
  expectCount("documents in status (every page crawled)", kb.status?.documents ?? 0, site.total);
  for (const i of [0, Math.floor(site.pages / 2), site.pages - 1]) {
    const hit = await topHit(stack, site, i);
    expectWork(hit?.includes(site.textOf(i)) === true, `a search for page ${i} answers it first (got ${hit})`);
  }
  const bytes = Object.entries(kb.metadata.annotations ?? {}).reduce((n, [k, v]) => n + k.length + v.length, 0);
  expectWork(bytes < 2048, `the KnowledgeBase's annotations stay under 2 KiB (${bytes} bytes)`);
}

/** One refresh: started by `start`, until every page is searchable; the chunks search embedded meanwhile. */
async function refresh(stack: Stack, site: Site, start: () => Promise<unknown>) {
  const chunks0 = await searchCounter(stack, "capstan_search_ingested_chunks_total");
  const docs0 = await searchCounter(stack, "capstan_search_ingested_documents_total", 'outcome="embedded"');
  const began = Date.now();
  await start();
  const kb = await refreshEnded(stack, began);
  await expectAllIn(stack, site, kb);
  const ms = Date.now() - began;
  return {
    ms,
    chunks: (await searchCounter(stack, "capstan_search_ingested_chunks_total")) - chunks0,
    documents: (await searchCounter(stack, "capstan_search_ingested_documents_total", 'outcome="embedded"')) - docs0,
  };
}

async function run(site: Site, stack: Stack): Promise<void> {
  const load0 = loadavg()[0] as number;
  log(`site: ${site.total} pages (${site.pages} pages, ${site.sections} sections, the index); stack up`);
  const first = await refresh(stack, site, () =>
    stack.kube.json(KB_PATH(stack.namespace), {
      method: "POST",
      body: {
        apiVersion: "capstan.dev/v1alpha1",
        kind: "KnowledgeBase",
        metadata: { name: "site", namespace: stack.namespace },
        spec: { sources: [{ name: "Site", crawl: { url: site.start, limit: site.total } }] },
      },
    }),
  );
  expectAtLeast("pages the site served in the first crawl", site.served.leaves, site.pages);
  expectCount("documents embedded by the first refresh", first.documents, site.total);
  log(`first refresh: searchable after ${seconds(first.ms)} s, ${first.chunks} chunks embedded`);

  // 1 % of the pages change; a spec change starts the second refresh at once.
  const changed = Array.from({ length: Math.max(1, Math.floor(site.pages / 100)) }, (_, k) => k * 100);
  site.change(changed);
  const second = await refresh(stack, site, () =>
    stack.kube.json(`${KB_PATH(stack.namespace)}/site`, {
      method: "PATCH",
      contentType: "application/merge-patch+json",
      body: { spec: { description: "second refresh" } },
    }),
  );
  expectCount("documents embedded by the second refresh (the changed pages)", second.documents, changed.length);
  const ratio = second.chunks / first.chunks;
  const peaks = stack.peaks();
  const mib = (n: number) => `${n.toFixed(0)} MiB`;
  log(`second refresh (${changed.length} pages changed): ${seconds(second.ms)} s, ${second.chunks} chunks embedded`);
  process.stdout.write(
    [
      `pages: ${site.total} (${site.pages} + ${site.sections} sections + index), scraper concurrency ${CONCURRENCY}`,
      `time to searchable: ${seconds(first.ms)} s (${(site.total / (first.ms / 1000)).toFixed(1)} pages/s)`,
      `second refresh, ${changed.length} pages changed: ${seconds(second.ms)} s (${(site.total / (second.ms / 1000)).toFixed(1)} pages/s)`,
      `embedding work: first ${first.chunks} chunks, second ${second.chunks} chunks; ratio ${(ratio * 100).toFixed(2)} % (at most ${MAX_RATIO * 100} %)`,
      `peak RSS: operator ${mib(peaks.operator)}, search ${mib(peaks.search)}, scraper ${mib(peaks.scraper)} (+ Chromium ${mib(peaks.chromium)} PSS)`,
      `load average (1 min): ${load0.toFixed(2)} at the start, ${(loadavg()[0] as number).toFixed(2)} at the end`,
      `RESULT ${JSON.stringify({ pages: site.total, firstMs: first.ms, secondMs: second.ms, firstChunks: first.chunks, secondChunks: second.chunks, ratio, peaks })}`,
      "",
    ].join("\n"),
  );
  workChecked(
    `${site.total} pages crawled, ingested and searchable; the second refresh embedded the ${changed.length} changed pages`,
  );
  if (ratio > MAX_RATIO) {
    process.stderr.write(`the second refresh's embedding work is ${(ratio * 100).toFixed(2)} % of the first's\n`);
    process.exitCode = 1;
  }
}

const site = await startSite(PAGES);
let stack: Stack | undefined;
try {
  stack = await startStack(site.host, CONCURRENCY);
  await run(site, stack);
} catch (err) {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exitCode = 1;
} finally {
  await stack?.stop();
  await site.close();
}
