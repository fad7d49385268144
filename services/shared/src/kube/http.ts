// HTTP to the API server with one pooled connection agent: JSON calls and streamed watches, auth
// from a KubeAccess (client certificates, bearer tokens including rotated in-cluster tokens), a
// timeout on every call and controller-runtime's rest_client metrics. Writes are counted, which
// the steady-state tests and the benchmark use.

import { Agent, type Dispatcher, fetch, type Response } from "undici";
import { Counter, Histogram, LATENCY_BUCKETS, type Registry } from "../metrics.ts";
import type { KubeAccess } from "./access.ts";

export interface JsonRequest {
  method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  timeoutMs?: number;
}

/** A non-2xx answer of the API server, with its HTTP status and Status reason. */
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

export class KubeHttp {
  readonly server: string;
  /** Non-GET requests sent (successful or not). */
  writes = 0;
  /** Observes every write (method and path, never the body): tests and benchmarks count them. */
  onWrite: ((method: string, path: string) => void) | undefined;
  /** Where and as whom this client talks (server, CA, credentials). */
  readonly access: KubeAccess;
  private readonly dispatcher: Dispatcher;
  private readonly requests: Counter<"code" | "method">;
  private readonly latency: Histogram<"verb">;
  private readonly defaultTimeoutMs: number;

  constructor(access: KubeAccess, registry: Registry, opts: { timeoutMs?: number } = {}) {
    this.access = access;
    this.server = access.server.replace(/\/$/, "");
    this.defaultTimeoutMs = opts.timeoutMs ?? 30_000;
    this.dispatcher = new Agent({
      connect: {
        ...(access.ca ? { ca: access.ca } : {}),
        ...(access.cert ? { cert: access.cert } : {}),
        ...(access.key ? { key: access.key } : {}),
        ...(access.insecureSkipTlsVerify ? { rejectUnauthorized: false } : {}),
        keepAlive: true,
        keepAliveInitialDelay: 30_000,
      },
      keepAliveTimeout: 30_000,
      connections: 64,
    });
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
  }

  private prepare(): { headers: Record<string, string>; dispatcher: Dispatcher } {
    const headers: Record<string, string> = {};
    const token = this.access.token?.();
    if (token) headers.authorization = `Bearer ${token}`;
    else if (this.access.basic) {
      headers.authorization = `Basic ${Buffer.from(`${this.access.basic.username}:${this.access.basic.password}`).toString("base64")}`;
    }
    return { headers, dispatcher: this.dispatcher };
  }

  private url(path: string, query: JsonRequest["query"]): URL {
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    return url;
  }

  async json<T = unknown>(path: string, req: JsonRequest = {}): Promise<T> {
    const method = req.method ?? "GET";
    const { headers, dispatcher } = this.prepare();
    const h: Record<string, string> = { ...headers, accept: "application/json" };
    if (req.body !== undefined) h["content-type"] = req.contentType ?? "application/json";
    if (method !== "GET") {
      this.writes += 1;
      this.onWrite?.(method, path);
    }
    const end = this.latency.startTimer({ verb: method });
    let res: Response;
    try {
      res = await fetch(this.url(path, req.query), {
        method,
        headers: h,
        dispatcher,
        body: req.body === undefined ? undefined : JSON.stringify(req.body),
        signal: AbortSignal.timeout(req.timeoutMs ?? this.defaultTimeoutMs),
      });
    } catch (err) {
      this.requests.inc({ code: "<error>", method });
      end();
      throw err;
    }
    const text = await res.text();
    end();
    this.requests.inc({ code: String(res.status), method });
    let json: Record<string, unknown> = {};
    try {
      json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      json = { message: text.slice(0, 200) };
    }
    if (res.status >= 400) {
      throw new KubeApiError(res.status, String(json.reason ?? res.statusText), String(json.message ?? res.statusText));
    }
    return json as T;
  }

  /** Opens a streamed GET (a watch). The caller reads res.body and aborts through signal. */
  async stream(path: string, query: JsonRequest["query"], signal: AbortSignal): Promise<Response> {
    const { headers, dispatcher } = this.prepare();
    const res = await fetch(this.url(path, query), {
      headers: { ...headers, accept: "application/json" },
      dispatcher,
      signal,
    });
    this.requests.inc({ code: String(res.status), method: "WATCH" });
    return res;
  }

  async close(): Promise<void> {
    await this.dispatcher.destroy().catch(() => undefined);
  }
}

export function isStatus(err: unknown, status: number): boolean {
  return err instanceof KubeApiError && err.status === status;
}
