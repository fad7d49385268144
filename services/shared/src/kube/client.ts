// A thin HTTP client over a KubeConfig (auth, TLS and server from client-node), for the paths the
// generated clients make awkward: generic list/watch of any resource, server-side apply, status.
import { type KubeConfig, Watch } from "@kubernetes/client-node";
import { HttpMethod, RequestContext } from "@kubernetes/client-node/dist/gen/http/http.js";
import { fetch } from "undici";

export class KubeApiError extends Error {
  readonly status: number;
  readonly reason: string;
  constructor(status: number, reason: string, message: string) {
    super(message);
    this.status = status;
    this.reason = reason;
    this.name = "KubeApiError";
  }
}

export interface KubeRequest {
  method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  timeoutMs?: number;
}

const METHODS: Record<string, HttpMethod> = {
  GET: HttpMethod.GET,
  POST: HttpMethod.POST,
  PUT: HttpMethod.PUT,
  PATCH: HttpMethod.PATCH,
  DELETE: HttpMethod.DELETE,
};

export class KubeClient {
  readonly config: KubeConfig;
  constructor(config: KubeConfig) {
    this.config = config;
  }

  async request<T = unknown>(path: string, req: KubeRequest = {}): Promise<T> {
    const cluster = this.config.getCurrentCluster();
    if (!cluster) throw new Error("kubeconfig has no current cluster");
    const url = new URL(cluster.server + path);
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const method = req.method ?? "GET";
    const ctx = new RequestContext(url.toString(), METHODS[method] as HttpMethod);
    await this.config.applySecurityAuthentication(ctx);
    const headers: Record<string, string> = { ...ctx.getHeaders(), accept: "application/json" };
    if (req.body !== undefined) headers["content-type"] = req.contentType ?? "application/json";
    const res = await fetch(url, {
      method,
      headers,
      dispatcher: ctx.getDispatcher() as never,
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
      signal: AbortSignal.timeout(req.timeoutMs ?? 30_000),
    });
    const text = await res.text();
    const json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    if (res.status >= 400) {
      throw new KubeApiError(res.status, String(json.reason ?? res.statusText), String(json.message ?? text));
    }
    return json as T;
  }

  watcher(): Watch {
    return new Watch(this.config);
  }
}

/** The collection path of a resource, e.g. /apis/capstan.dev/v1alpha1/namespaces/ns/agents. */
export function collectionPath(apiVersion: string, plural: string, namespace?: string): string {
  const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return namespace ? `${base}/namespaces/${namespace}/${plural}` : `${base}/${plural}`;
}
