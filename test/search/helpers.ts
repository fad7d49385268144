// Shared set-up of the search integration tests: resources in a real ResourceView, the real app
// (real model, embedded store) listening on 127.0.0.1:0, and a tiny HTTP helper.
import type { AddressInfo } from "node:net";
import { hashKey, type Logger, listenInternal } from "@capstan/shared";
import type { KnowledgeBase, SearchKey } from "@capstan/shared/api";
import { ResourceView } from "@capstan/shared/resource-view";
import type { FastifyInstance } from "fastify";
import type { SearchConfigInput } from "../../services/search/src/config.ts";
import { buildApp, type Embedder, loadLocalEmbedder, loadSearchConfig } from "../../services/search/src/index.ts";
import type { Doc } from "./corpus.ts";

export const INTERNAL_TOKEN = "test-internal-token-0123456789";

export function knowledgeBase(name: string, extra: Partial<KnowledgeBase["spec"]> = {}): KnowledgeBase {
  return {
    apiVersion: "capstan.dev/v1alpha1",
    kind: "KnowledgeBase",
    metadata: { name, namespace: "default" },
    spec: {
      embedding: { provider: "local", model: "all-MiniLM-L6-v2" },
      chunking: { size: 800, overlap: 100 },
      sources: [],
      refreshInterval: "24h",
      ...extra,
    },
  };
}

export function searchKey(
  name: string,
  key: string,
  spec: Partial<SearchKey["spec"]> & { knowledgeIds: string[] },
  status: Partial<NonNullable<SearchKey["status"]>> = {},
): SearchKey {
  return {
    apiVersion: "capstan.dev/v1alpha1",
    kind: "SearchKey",
    metadata: { name, namespace: "default" },
    spec: { keyName: name, permissions: ["read"], requestsPerMinute: 600, ...spec },
    status: { keyHash: hashKey(key), ...status },
  };
}

let shared: Promise<Embedder> | undefined;
/** One model per test file: loading it is the slow part. */
export function localEmbedder(): Promise<Embedder> {
  shared ??= loadLocalEmbedder(loadSearchConfig({}));
  return shared;
}

export interface Running {
  app: FastifyInstance;
  /** The public port: search. */
  url: string;
  /** The internal port: documents API, /metrics, health. */
  internalUrl: string;
  view: ResourceView;
  close(): Promise<void>;
}

export async function startSearch(
  opts: {
    config?: SearchConfigInput;
    keys?: SearchKey[];
    kbs?: KnowledgeBase[];
    host?: string;
    now?: () => number;
    /** Let the app load its own model (its metrics then count the model runs). */
    ownModel?: boolean;
    /** Models beside the local one (a second model for a model change). */
    moreEmbedders?: Embedder[];
    logger?: Logger;
  } = {},
): Promise<Running> {
  const view = new ResourceView();
  view.replace("KnowledgeBase", opts.kbs ?? []);
  view.replace("SearchKey", opts.keys ?? []);
  const app = await buildApp(
    { internalToken: INTERNAL_TOKEN, logLevel: "warn", ...opts.config },
    {
      view,
      ...(opts.ownModel ? {} : { embedders: [await localEmbedder(), ...(opts.moreEmbedders ?? [])] }),
      ...(opts.now ? { now: opts.now } : {}),
      ...(opts.logger ? { logger: opts.logger } : {}),
    },
  );
  const host = opts.host ?? "127.0.0.1";
  await app.listen({ port: 0, host });
  const addr = app.server.address();
  if (!addr || typeof addr === "string") throw new Error("no address");
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${addr.port}`;
  const internal = (await listenInternal(app, { port: 0, host })).address() as AddressInfo;
  const internalUrl = `http://${host.includes(":") ? `[${host}]` : host}:${internal.port}`;
  return { app, url, internalUrl, view, close: () => app.close() };
}

export interface Reply<T = unknown> {
  status: number;
  body: { code: number; message: string; data: T | null };
  headers: Headers;
}

export async function call<T = unknown>(
  url: string,
  path: string,
  opts: { method?: string; token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<Reply<T>> {
  const res = await fetch(`${url}${path}`, {
    method: opts.method ?? "POST",
    headers: {
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      // The internal caller names the namespace it searches in, as the gateway does for its Agent.
      ...(opts.token === INTERNAL_TOKEN ? { "x-capstan-namespace": "default" } : {}),
      ...(opts.body !== undefined || opts.raw !== undefined ? { "content-type": "application/json" } : {}),
      ...opts.headers,
    },
    ...(opts.raw !== undefined
      ? { body: opts.raw }
      : opts.body !== undefined
        ? { body: JSON.stringify(opts.body) }
        : {}),
    signal: AbortSignal.timeout(60_000),
  });
  return { status: res.status, body: (await res.json()) as Reply<T>["body"], headers: res.headers };
}

/** The documents API path of a knowledge base of the test namespace ("default"). */
export const kbPath = (knowledgeId: string, namespace = "default") =>
  `/internal/v1/namespaces/${namespace}/knowledge-bases/${knowledgeId}`;

export async function ingest(url: string, knowledgeId: string, docs: Doc[], namespace = "default"): Promise<void> {
  const kb = await call(url, kbPath(knowledgeId, namespace), {
    method: "PUT",
    token: INTERNAL_TOKEN,
    body: {},
  });
  if (kb.status !== 200) throw new Error(`ensure ${knowledgeId}: ${kb.status} ${kb.body.message}`);
  for (const d of docs) {
    const r = await call(url, `${kbPath(knowledgeId, namespace)}/documents/${d.docsId}`, {
      method: "PUT",
      token: INTERNAL_TOKEN,
      body: { docsName: d.docsName, text: d.text },
    });
    if (r.status !== 200) throw new Error(`ingest ${d.docsId}: ${r.status} ${r.body.message}`);
  }
}
