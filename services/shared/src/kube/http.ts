// The transport under client-node: every request of client-node's typed APIs (CustomObjectsApi,
// CoordinationV1Api, EventsV1Api, ...) and KubernetesObjectApi, through the HttpLibrary this class
// plugs into their Configuration, is authenticated by client-node's KubeConfig (certificates,
// tokens, token files, exec and OIDC plugins) and sent over one pooled undici agent built from
// client-node's dispatcher options, with a timeout and controller-runtime's rest_client metrics.
// client-node's own library builds a new agent (a new TLS connection) for every request; pooling is
// what this adds. Per-call options (a timeout, a patch content type) are client-node middleware.
// Writes are counted, which the steady-state tests and the benchmark use.
//
// One request is built here rather than by client-node: list(), the reflector's paginated list of
// one collection as the API server's JSON. client-node's lists of the core kinds (CoreV1Api,
// KubernetesObjectApi.list) return its model classes (timestamps as Date objects), while its Watch
// delivers plain JSON: an informer fed by both would hold two shapes of the same kind. Its
// CustomObjectsApi keeps the JSON but addresses /apis/<group>/... only, not the core group.
import {
  ApiException,
  type Configuration,
  createConfiguration,
  HttpMethod,
  type KubeConfig,
  KubernetesObjectApi,
  Observable,
  RequestContext,
  ResponseContext,
  type SecurityAuthentication,
  ServerConfiguration,
  type setHeaderOptions,
  wrapHttpLibrary,
} from "@kubernetes/client-node";
import { Agent, type Dispatcher, fetch, ProxyAgent } from "undici";
import { Counter, Histogram, LATENCY_BUCKETS, type Registry } from "../metrics.ts";
import { contextNamespace } from "./config.ts";

/** client-node's per-call configuration options (middleware), as its API methods take them. */
export type CallOptions = ReturnType<typeof setHeaderOptions>;

/** A page of a collection as the API server sends it. */
export interface ListPage<T> {
  metadata: { resourceVersion: string; continue?: string };
  items: T[];
}

interface StatusBody {
  reason?: string;
  message?: string;
}

/** A non-2xx answer of the API server: client-node's ApiException with the Status reason and a short message. */
export class KubeApiError extends ApiException<StatusBody> {
  readonly status: number;
  readonly reason: string;
  constructor(status: number, reason: string, message: string, body: StatusBody = {}) {
    super(status, message, body, {});
    this.message = message;
    this.status = status;
    this.reason = reason;
    this.name = "KubeApiError";
  }
}

/**
 * client-node's ApiException (its message carries the whole body and the response headers) as a
 * KubeApiError with the Status reason and message only; anything else is returned as it is.
 */
export function conciseError(err: unknown): unknown {
  if (!(err instanceof ApiException) || err instanceof KubeApiError) return err;
  let body: StatusBody = {};
  try {
    body = (typeof err.body === "string" ? JSON.parse(err.body) : err.body) ?? {};
  } catch {
    body = { message: String(err.body).slice(0, 200) };
  }
  const reason = body.reason ?? `HTTP ${err.code}`;
  return new KubeApiError(err.code, reason, body.message ?? reason, body);
}

/** The HTTP status of an API error, from this layer or from client-node (ApiException, Watch errors). */
export function statusOf(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  const code = (err as { statusCode?: unknown } | undefined)?.statusCode;
  return typeof code === "number" ? code : undefined;
}

export function isStatus(err: unknown, status: number): boolean {
  return statusOf(err) === status;
}

type Tls = { ca?: Buffer; cert?: Buffer; key?: Buffer; rejectUnauthorized?: boolean; servername?: string };

const sameBuffer = (a: Buffer | undefined, b: Buffer | undefined) => (a && b ? a.equals(b) : a === b);

export class KubeHttp {
  readonly server: string;
  readonly kubeConfig: KubeConfig;
  /** The current context's namespace, if it names one. */
  readonly namespace: string | undefined;
  /** Non-GET requests sent (successful or not). */
  writes = 0;
  /** Observes every write (method and path, never the body): tests and benchmarks count them. */
  onWrite: ((method: string, path: string) => void) | undefined;
  /** client-node's Configuration over this transport: pass it to any client-node API class. */
  readonly configuration: Configuration;
  private pool: { tls: Tls; dispatcher: Dispatcher } | undefined;
  private readonly requests: Counter<"code" | "method">;
  private readonly latency: Histogram<"verb">;
  private readonly defaultTimeoutMs: number;

  constructor(kubeConfig: KubeConfig, registry: Registry, opts: { timeoutMs?: number } = {}) {
    this.kubeConfig = kubeConfig;
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error("kubeconfig: no current cluster");
    this.server = cluster.server.replace(/\/$/, "");
    this.namespace = contextNamespace(kubeConfig);
    this.defaultTimeoutMs = opts.timeoutMs ?? 30_000;
    this.requests = new Counter({
      name: "rest_client_requests_total",
      help: "Number of HTTP requests to the API server, partitioned by status code and method",
      labelNames: ["code", "method"] as const,
      registers: [registry],
    });
    this.latency = new Histogram({
      name: "rest_client_request_duration_seconds",
      help: "Request latency to the API server by verb",
      labelNames: ["verb"] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    });
    const auth: SecurityAuthentication = {
      getName: () => "capstan pooled kubeconfig",
      applySecurityAuthentication: (ctx) => this.authenticate(ctx),
    };
    this.configuration = createConfiguration({
      baseServer: new ServerConfiguration(this.server, {}),
      authMethods: { default: auth },
      httpApi: wrapHttpLibrary({ send: (ctx) => this.send(ctx) }),
    });
  }

  /** client-node's dynamic object client (server-side apply, any kind) over this transport. */
  objectApi(): KubernetesObjectApi {
    return new KubernetesObjectApi(this.configuration);
  }

  /** Sets the credentials of the current user (client-node) and the pooled agent on a request. */
  async authenticate(ctx: RequestContext): Promise<void> {
    const opts: Tls & { headers?: Record<string, string>; auth?: string } = {};
    await this.kubeConfig.applyToHTTPSOptions(opts as never);
    for (const [k, v] of Object.entries(opts.headers ?? {})) ctx.setHeaderParam(k, String(v));
    if (opts.auth) ctx.setHeaderParam("Authorization", `Basic ${Buffer.from(opts.auth).toString("base64")}`);
    const d = this.dispatcherFor(opts);
    if (d) ctx.setDispatcher(d);
  }

  /** One agent while the TLS material stays the same (a rotated client certificate gets a new one). */
  private dispatcherFor(opts: Tls): Dispatcher | undefined {
    const tls: Tls = {
      ...(opts.ca ? { ca: opts.ca } : {}),
      ...(opts.cert ? { cert: opts.cert } : {}),
      ...(opts.key ? { key: opts.key } : {}),
      ...(opts.rejectUnauthorized !== undefined ? { rejectUnauthorized: opts.rejectUnauthorized } : {}),
      ...(opts.servername ? { servername: opts.servername } : {}),
    };
    const p = this.pool;
    if (
      p &&
      sameBuffer(p.tls.ca, tls.ca) &&
      sameBuffer(p.tls.cert, tls.cert) &&
      sameBuffer(p.tls.key, tls.key) &&
      p.tls.rejectUnauthorized === tls.rejectUnauthorized &&
      p.tls.servername === tls.servername
    ) {
      return p.dispatcher;
    }
    const o = this.kubeConfig.createDispatcherOptions(this.kubeConfig.getCurrentCluster(), tls);
    const pooled = { keepAliveTimeout: 30_000, connections: 64 };
    let dispatcher: Dispatcher;
    if (o.type === "agent") dispatcher = new Agent({ ...pooled, connect: o.connect });
    else if (o.type === "proxy")
      dispatcher = new ProxyAgent({ uri: o.uri, requestTls: o.requestTls, connect: o.connect });
    else if (o.type === "none") dispatcher = new Agent(pooled);
    else return undefined; // a SOCKS proxy: client-node's own per-request dispatcher
    // Requests in flight on the old agent finish; it closes after them.
    if (p) void p.dispatcher.close().catch(() => undefined);
    this.pool = { tls, dispatcher };
    return dispatcher;
  }

  /** client-node's HttpLibrary: sends one request with its timeout and counts it. */
  async send(ctx: RequestContext, timeoutMs = this.defaultTimeoutMs): Promise<ResponseContext> {
    const method = ctx.getHttpMethod().toString();
    if (method !== "GET") {
      this.writes += 1;
      this.onWrite?.(method, new URL(ctx.getUrl()).pathname);
    }
    const end = this.latency.startTimer({ verb: method });
    try {
      const res = await fetch(ctx.getUrl(), {
        method,
        headers: ctx.getHeaders(),
        body: ctx.getBody() as string | undefined,
        dispatcher: ctx.getDispatcher() as Dispatcher | undefined,
        signal: ctx.getSignal() ?? AbortSignal.timeout(timeoutMs),
      });
      const text = await res.text();
      this.requests.inc({ code: String(res.status), method });
      const headers: Record<string, string> = {};
      res.headers.forEach((v, k) => {
        headers[k] = v;
      });
      const bytes = Buffer.from(text);
      return new ResponseContext(res.status, headers, {
        text: async () => text,
        binary: async () => bytes,
        stream: () => null,
      });
    } catch (err) {
      this.requests.inc({ code: "<error>", method });
      throw err;
    } finally {
      end();
    }
  }

  /** Counts a watch request (sent by client-node's Watch) in rest_client_requests_total. */
  countWatch(code: string): void {
    this.requests.inc({ code, method: "WATCH" });
  }

  /**
   * Per-call options for a client-node API call over this transport: a timeout other than the
   * default, and the Content-Type of a patch (client-node's generated patch methods send a JSON
   * Patch unless told otherwise, e.g. PatchStrategy.ServerSideApply or MergePatch).
   */
  options(o: { timeoutMs?: number; contentType?: string }): CallOptions {
    const pre = (ctx: RequestContext) => {
      if (o.contentType) ctx.setHeaderParam("Content-Type", o.contentType);
      if (o.timeoutMs) ctx.setSignal(AbortSignal.timeout(o.timeoutMs));
      return new Observable(Promise.resolve(ctx));
    };
    const post = (res: ResponseContext) => new Observable(Promise.resolve(res));
    return { middleware: [{ pre, post }], middlewareMergeStrategy: "append" };
  }

  /** A client-node API class (CustomObjectsApi, CoordinationV1Api, ...) over this transport. */
  api<A>(Api: new (configuration: Configuration) => A): A {
    return new Api(this.configuration);
  }

  /** One page of a collection as the API server's JSON (see the top of this file for why not client-node's lists). */
  async list<T>(
    path: string,
    query: Record<string, string | number | undefined>,
    timeoutMs?: number,
  ): Promise<ListPage<T>> {
    const ctx = new RequestContext(this.server + path, HttpMethod.GET);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) ctx.setQueryParam(k, String(v));
    ctx.setHeaderParam("Accept", "application/json");
    await this.authenticate(ctx);
    const res = await this.send(ctx, timeoutMs);
    const text = await res.body.text();
    if (res.httpStatusCode >= 400) throw conciseError(new ApiException(res.httpStatusCode, text, text, res.headers));
    return JSON.parse(text) as ListPage<T>;
  }

  async close(): Promise<void> {
    const d = this.pool?.dispatcher;
    this.pool = undefined;
    await d?.destroy().catch(() => undefined);
  }
}
