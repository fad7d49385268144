// A real search service for operator tests that need one (ingestion writes to its documents API):
// the local embedding model, the namespace's SearchKeys and KnowledgeBases learnt from the API
// server, served on loopback with the internal-token Secret the operator reads.
import { buildApp as buildSearch, loadLocalEmbedder, loadSearchConfig } from "@capstan/search";
import { KubeSource, ResourceView } from "@capstan/shared/resource-view";
import type { TestKube } from "../ground/kube-client.ts";
import { serveSearchToOperator } from "./helpers.ts";

export type ServedSearch = Awaited<ReturnType<typeof serveSearchToOperator>> & {
  app: Awaited<ReturnType<typeof buildSearch>>;
  close(): Promise<void>;
};

export async function startSearchForOperator(client: TestKube, ns: string, token: string): Promise<ServedSearch> {
  const view = new ResourceView();
  const source = new KubeSource(view, client, { namespace: ns, kinds: ["SearchKey", "KnowledgeBase"] });
  await source.start();
  const embedder = await loadLocalEmbedder(loadSearchConfig({}));
  const app = await buildSearch({ internalToken: token, logLevel: "warn" }, { view, embedders: [embedder] });
  const served = await serveSearchToOperator(client, ns, app, token, 60_000);
  return {
    ...served,
    app,
    close: async () => {
      source.stop();
      await app.close();
    },
  };
}
