// A real search service for operator tests that need one (ingestion writes to its documents API):
// the local embedding model, the namespace's SearchKeys and KnowledgeBases learnt from the API
// server, served on loopback with the internal-token Secret the operator reads.
import { buildApp as buildSearch, loadLocalEmbedder, loadSearchConfig } from "@capstan/search";
import { KubeSource, ResourceView } from "@capstan/shared/resource-view";
import type { TestKube } from "../ground/kube-client.ts";
import { internalTokenSecret, serveSearchToOperator } from "./helpers.ts";

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
): Promise<ServedSearch> {
  const view = new ResourceView();
  const kinds: ["SearchKey", "KnowledgeBase"] = ["SearchKey", "KnowledgeBase"];
  const source = new KubeSource(view, client, watchNamespace ? { namespace: watchNamespace, kinds } : { kinds });
  await source.start();
  const embedder = await loadLocalEmbedder(loadSearchConfig({}));
  const app = await buildSearch({ internalToken: token, logLevel: "warn", ...config }, { view, embedders: [embedder] });
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
