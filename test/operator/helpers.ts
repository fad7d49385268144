// Helpers of the operator's integration tests: an operator bound to one namespace of a real API
// server, polling, object creation, and an in-memory stand-in for the search service's documents
// API at the interface level (used where the real search service is not started).
import type { AddressInfo } from "node:net";
import { createLogger, createRegistry, listenInternal } from "@capstan/shared";
import type { PruneRequest } from "@capstan/shared/clients/search-client";
import { SearchClient } from "@capstan/shared/clients/search-client";
import { KubeApiError, kubeConfigFromFile } from "@capstan/shared/kube";
import type { FastifyInstance } from "fastify";
import { loadOperatorConfig, type OperatorConfigInput } from "../../operator/src/config.ts";
import type {
  DocumentInput,
  KnowledgeBaseRef,
  KnowledgeBaseSettings,
  SearchDocuments,
} from "../../operator/src/ingest/search-documents.ts";
import { Operator, type OperatorDeps } from "../../operator/src/manager.ts";
import type { TestKube } from "../ground/kube-client.ts";

/**
 * A real search service for the operator: listening on loopback, a client of its documents API,
 * and the internal-token Secret it was started with (the operator never overwrites an existing one).
 */
export async function serveSearchToOperator(
  client: TestKube,
  ns: string,
  search: FastifyInstance,
  token: string,
  timeoutMs = 30_000,
): Promise<{ url: string; internalUrl: string; searchClient: SearchClient }> {
  await search.listen({ port: 0, host: "127.0.0.1" });
  const addr = search.server.address() as { port?: number } | null;
  const url = `http://127.0.0.1:${addr?.port ?? 0}`;
  // The documents API answers on the internal port only.
  const internal = (await listenInternal(search, { port: 0, host: "127.0.0.1" })).address() as AddressInfo;
  const internalUrl = `http://127.0.0.1:${internal.port}`;
  await internalTokenSecret(client, ns, token);
  return {
    url,
    internalUrl,
    // Its searches are the internal caller's on behalf of this namespace (as the gateway's Agents),
    // on the internal port: the only one that accepts the internal token.
    searchClient: new SearchClient({ baseURL: internalUrl, token, namespace: ns, timeoutMs }),
  };
}

/** The key-verifier key of test/operator's search services (the operator's Secret in their namespaces). */
export const TEST_KEY_VERIFIER = "test-key-verifier-0123456789abcdef";

/**
 * The internal-token Secret an operator of this namespace reads, and its key-verifier Secret (the
 * HMAC key of user-supplied keys, TEST_KEY_VERIFIER, which the test's search is given), as the
 * operator would generate them: it never overwrites either.
 */
export async function internalTokenSecret(client: TestKube, ns: string, token: string): Promise<void> {
  const owned = (name: string, data: Record<string, string>): Obj => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: ns, labels: { "app.kubernetes.io/managed-by": "capstan-operator" } },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")])),
  });
  await create(client, owned("capstan-key-verifier", { key: TEST_KEY_VERIFIER }));
  await create(client, owned("capstan-internal-token", { token }));
}

export function startOperatorFor(
  kubeconfig: string,
  namespace: string,
  overrides: Record<string, unknown> = {},
  deps: Partial<OperatorDeps> = {},
): Operator {
  const config = loadOperatorConfig({}, {
    namespace,
    watchNamespace: namespace,
    metricsPort: 0,
    healthPort: 0,
    leaderElection: { enabled: false },
    ...overrides,
  } satisfies Partial<OperatorConfigInput> as Record<string, unknown>);
  return new Operator(config, {
    kubeConfig: kubeConfigFromFile(kubeconfig),
    registry: createRegistry({ defaultMetrics: false }),
    logger: createLogger({ name: "operator-test", level: process.env.OPERATOR_TEST_LOG ?? "silent" }),
    ...deps,
  });
}

export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ""}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface Obj {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
    deletionTimestamp?: string;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown> & {
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
  data?: Record<string, string>;
  [k: string]: unknown;
}

const PLURAL: Record<string, string> = {
  Agent: "agents",
  AccessChannel: "accesschannels",
  SearchKey: "searchkeys",
  KnowledgeBase: "knowledgebases",
  Scraper: "scrapers",
  Secret: "secrets",
  ConfigMap: "configmaps",
  Deployment: "deployments",
  Service: "services",
  Lease: "leases",
  ServiceAccount: "serviceaccounts",
};

export function pathOf(apiVersion: string, kind: string, namespace: string, name?: string): string {
  const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return `${base}/namespaces/${namespace}/${PLURAL[kind]}${name ? `/${name}` : ""}`;
}

export async function create(client: TestKube, obj: Obj): Promise<Obj> {
  return client.json<Obj>(pathOf(obj.apiVersion, obj.kind, obj.metadata.namespace as string), {
    method: "POST",
    body: obj,
  });
}

export async function get(
  client: TestKube,
  apiVersion: string,
  kind: string,
  ns: string,
  name: string,
): Promise<Obj | undefined> {
  try {
    return await client.json<Obj>(pathOf(apiVersion, kind, ns, name));
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return undefined;
    throw err;
  }
}

export async function list(client: TestKube, apiVersion: string, kind: string, ns: string): Promise<Obj[]> {
  return (await client.json<{ items: Obj[] }>(pathOf(apiVersion, kind, ns))).items;
}

export async function remove(
  client: TestKube,
  apiVersion: string,
  kind: string,
  ns: string,
  name: string,
): Promise<void> {
  await client.json(pathOf(apiVersion, kind, ns, name), { method: "DELETE" });
}

export async function patch(
  client: TestKube,
  obj: { apiVersion: string; kind: string; ns: string; name: string },
  body: unknown,
): Promise<Obj> {
  return client.json<Obj>(pathOf(obj.apiVersion, obj.kind, obj.ns, obj.name), {
    method: "PATCH",
    body,
    contentType: "application/merge-patch+json",
  });
}

export const CAP = "capstan.dev/v1alpha1";

export function condition(obj: Obj | undefined, type: string) {
  return obj?.status?.conditions?.find((c) => c.type === type);
}

export async function whenCondition(
  client: TestKube,
  kind: string,
  ns: string,
  name: string,
  type: string,
  status: string,
  reason?: string,
): Promise<Obj> {
  return eventually(`${kind} ${name} ${type}=${status}${reason ? ` (${reason})` : ""}`, async () => {
    const o = await get(client, CAP, kind, ns, name);
    const c = condition(o, type);
    return c && c.status === status && (!reason || c.reason === reason) ? o : undefined;
  });
}

/**
 * The KnowledgeBase once the refresh of its current generation has ended with every source in:
 * its status observes the generation, names no refresh under way, and says Ingested.
 */
export function refreshedKnowledgeBase(client: TestKube, ns: string, name: string, timeoutMs: number): Promise<Obj> {
  return eventually(
    `the refresh of KnowledgeBase ${name} to end`,
    async () => {
      const kb = (await get(client, CAP, "KnowledgeBase", ns, name)) as Obj;
      const done =
        kb.status?.observedGeneration === kb.metadata.generation &&
        !kb.status?.refresh &&
        condition(kb, "Ingested")?.status === "True";
      return done ? kb : undefined;
    },
    timeoutMs,
  );
}

/** The documents API at the interface level, in memory: what the search service stores per knowledge base. */
export class InMemorySearchDocuments implements SearchDocuments {
  readonly kbs = new Map<
    string,
    { settings: KnowledgeBaseSettings; docs: Map<string, DocumentInput & { chunks: number; contentHash: string }> }
  >();
  readonly deleted: string[] = [];
  readonly calls: string[] = [];

  async ensureKnowledgeBase(ref: KnowledgeBaseRef, settings: KnowledgeBaseSettings) {
    const id = keyOf(ref);
    this.calls.push(`ensure ${id}`);
    const kb = this.kbs.get(id);
    if (kb) kb.settings = settings;
    else this.kbs.set(id, { settings, docs: new Map() });
    return { collection: `capstan_${id}` };
  }
  async deleteKnowledgeBase(ref: KnowledgeBaseRef) {
    const id = keyOf(ref);
    this.calls.push(`delete ${id}`);
    this.deleted.push(id);
    this.kbs.delete(id);
  }
  async upsertDocument(ref: KnowledgeBaseRef, docsId: string, doc: DocumentInput) {
    const id = keyOf(ref);
    const kb = this.kbs.get(id);
    if (!kb) throw new Error(`knowledge base ${id} not found`);
    const size = kb.settings.chunking?.size ?? 800;
    const chunks = Math.max(1, Math.ceil(doc.text.length / size));
    const contentHash = `${size}:${doc.text}`;
    const before = kb.docs.get(docsId);
    const embedded = before?.contentHash !== contentHash;
    kb.docs.set(docsId, { ...doc, chunks, contentHash });
    return { knowledgeId: ref.knowledgeId, docsId, chunks, embedded, contentHash };
  }
  /** The same rule as search's (services/search/src/store/types.ts: prunable). */
  async pruneDocuments(ref: KnowledgeBaseRef, r: PruneRequest) {
    const kb = this.kbs.get(keyOf(ref));
    let deleted = 0;
    for (const [docsId, d] of kb?.docs ?? []) {
      const gone =
        d.source === undefined
          ? (r.legacy ?? []).includes(docsId) && d.refresh !== r.refresh
          : !r.sources.includes(d.source) || (r.complete.includes(d.source) && d.refresh !== r.refresh);
      if (gone) {
        kb?.docs.delete(docsId);
        deleted++;
      }
    }
    return { knowledgeId: ref.knowledgeId, deleted };
  }
  async deleteDocument(ref: KnowledgeBaseRef, docsId: string) {
    this.kbs.get(keyOf(ref))?.docs.delete(docsId);
  }
  async getKnowledgeBase(ref: KnowledgeBaseRef) {
    const id = keyOf(ref);
    const kb = this.kbs.get(id);
    if (!kb) return undefined;
    let chunks = 0;
    for (const d of kb.docs.values()) chunks += d.chunks;
    return { knowledgeId: ref.knowledgeId, documents: kb.docs.size, chunks, collection: `capstan_${id}` };
  }
}

/** How InMemorySearchDocuments keys a knowledge base: `<namespace>.<kb_id>`, like the search service. */
export const keyOf = (ref: KnowledgeBaseRef) => `${ref.namespace}.${ref.knowledgeId}`;

/** Waits until no controller has work queued or in flight for a while. */
export async function quiesce(op: Operator, quietMs = 1500): Promise<void> {
  let lastCount = -1;
  let since = Date.now();
  await eventually(
    "operator to go quiet",
    () => {
      const count = Object.values(op.controllers).reduce((n, c) => n + c.reconciles, 0) + op.http.writes;
      const idle = Object.values(op.controllers).every((c) => c.queue.length === 0);
      if (count !== lastCount || !idle) {
        lastCount = count;
        since = Date.now();
        return false;
      }
      return Date.now() - since >= quietMs;
    },
    120_000,
  );
}
