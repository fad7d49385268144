// A real search service for operator tests that need one (ingestion writes to its documents API):
// the local embedding model, the namespace's SearchKeys and KnowledgeBases learnt from the API
// server, served on loopback with the internal-token Secret the operator reads; with a real
// scraper and an operator using both for tests of url and crawl sources (startScrapingStack).
import { buildApp as buildSearch, type Embedder, loadLocalEmbedder, loadSearchConfig } from "@capstan/search";
import { KubeSource, ResourceView } from "@capstan/shared/resource-view";
import type { Operator } from "../../operator/src/manager.ts";
import type { TestKube } from "../ground/kube-client.ts";
import { type Scraper, type Site, startScraper } from "../scraper/helpers.ts";
import { internalTokenSecret, serveSearchToOperator, startOperatorFor, TEST_KEY_VERIFIER } from "./helpers.ts";

export type ServedSearch = Awaited<ReturnType<typeof serveSearchToOperator>> & {
  app: Awaited<ReturnType<typeof buildSearch>>;
  close(): Promise<void>;
};

export function startSearchForOperator(client: TestKube, ns: string, token: string): Promise<ServedSearch> {
  return startSearchForNamespaces(client, [ns], token, {}, ns);
}

/**
 * One search service for several namespaces, as in a cluster: its view watches every namespace
 * (read-only), it serves on loopback, and each namespace has the internal-token Secret its
 * operator reads. Closed with the view.
 */
export async function startSearchForNamespaces(
  client: TestKube,
  namespaces: string[],
  token: string,
  config: Record<string, unknown> = {},
  /** Watch this namespace only (default: every namespace). */
  watchNamespace?: string,
  /** Models beside the local one (a second model for a model change). */
  moreEmbedders: Embedder[] = [],
): Promise<ServedSearch> {
  const view = new ResourceView();
  const kinds: ["SearchKey", "KnowledgeBase"] = ["SearchKey", "KnowledgeBase"];
  const source = new KubeSource(view, client, watchNamespace ? { namespace: watchNamespace, kinds } : { kinds });
  await source.start();
  const embedder = await loadLocalEmbedder(loadSearchConfig({}));
  const app = await buildSearch(
    { internalToken: token, keyVerifier: TEST_KEY_VERIFIER, logLevel: "warn", ...config },
    {
      view,
      embedders: [embedder, ...moreEmbedders],
    },
  );
  const [first, ...others] = namespaces;
  const served = await serveSearchToOperator(client, first as string, app, token, 60_000);
  for (const ns of others) await internalTokenSecret(client, ns, token);
  return {
    ...served,
    app,
    close: async () => {
      source.stop();
      await app.close();
    },
  };
}

/** A real scraper allowed to fetch `site`, a real search service and an operator using both. */
export interface ScrapingStack {
  scraper: Scraper | undefined;
  search: ServedSearch;
  operator: Operator;
  /** Stops the scraper (a later close() skips it). */
  stopScraper(): Promise<void>;
  close(): Promise<void>;
}

export async function startScrapingStack(
  client: TestKube,
  ns: string,
  token: string,
  site: Site,
  kubeconfig: string,
): Promise<ScrapingStack> {
  const scraper = await startScraper({ allowedHosts: [`127.0.0.1:${site.port}`] });
  const search = await startSearchForOperator(client, ns, token);
  const operator = startOperatorFor(kubeconfig, ns, {
    search: { internalUrl: search.internalUrl },
    scraping: { url: scraper.url, timeout: 20, max_retries: 0 },
  });
  await operator.start();
  const stack: ScrapingStack = {
    scraper,
    search,
    operator,
    stopScraper: async () => {
      const s = stack.scraper;
      stack.scraper = undefined;
      await s?.close();
    },
    close: async () => {
      await operator.stop();
      await search.close();
      await stack.stopScraper();
    },
  };
  return stack;
}
