// A small client for Qdrant's REST API on node:http(s). Written here instead of using
// @qdrant/js-client-rest because that client builds its own connection pool and offers no way to
// trust a private CA (a secured in-cluster Qdrant), and because every call needs our own timeout,
// bounded retries with jitter, metrics and error messages that never carry the API key.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { OutboundMetrics } from "@capstan/shared";
import { StoreError } from "./types.ts";

export interface QdrantHttpOptions {
  url: string;
  apiKey?: string | undefined;
  /** PEM CA bundle trusted for an https URL (in addition to the system roots). */
  ca?: string | undefined;
  /** Whole-call budget of one attempt: connect, send, server time, read. */
  timeoutMs?: number;
  /** Retries after the first attempt, on network errors, timeouts, 429 and 5xx. */
  maxRetries?: number;
  metrics?: OutboundMetrics | undefined;
}

/** A failed call: the HTTP status when the server answered, and Qdrant's own error text. */
export class QdrantCallError extends StoreError {
  readonly status: number | undefined;
  constructor(message: string, status: number | undefined, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "QdrantCallError";
    this.status = status;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class QdrantHttp {
  private readonly base: URL;
  private readonly agent: HttpAgent;
  private readonly send: typeof httpRequest;
  private readonly opts: QdrantHttpOptions;

  constructor(opts: QdrantHttpOptions) {
    this.opts = opts;
    this.base = new URL(opts.url.endsWith("/") ? opts.url : `${opts.url}/`);
    const tls = this.base.protocol === "https:";
    // Keep-alive pools: a search is one small request, a fresh TCP (and TLS) handshake would dominate it.
    this.agent = tls
      ? new HttpsAgent({ keepAlive: true, maxSockets: 32, ...(opts.ca ? { ca: opts.ca } : {}) })
      : new HttpAgent({ keepAlive: true, maxSockets: 32 });
    this.send = tls ? (httpsRequest as typeof httpRequest) : httpRequest;
  }

  /** Where the server is, without credentials (for logs). */
  get origin(): string {
    return this.base.origin;
  }

  /** One REST call with retries; `op` names it in metrics and errors. Returns Qdrant's `result`. */
  async call<T>(op: string, method: string, path: string, body?: unknown): Promise<T> {
    const retries = this.opts.maxRetries ?? 2;
    const m = this.opts.metrics;
    const target = `qdrant_${op}`;
    for (let attempt = 0; ; attempt++) {
      const started = performance.now();
      try {
        const out = await this.once<T>(method, path, body);
        m?.latency.observe({ target }, (performance.now() - started) / 1000);
        m?.calls.inc({ target, outcome: "ok" });
        return out;
      } catch (err) {
        const e = err as QdrantCallError;
        m?.calls.inc({ target, outcome: e.status ? `http_${e.status}` : "error" });
        const retryable = e.status === undefined || e.status === 429 || e.status >= 500;
        if (!retryable || attempt >= retries) throw e;
        m?.retries.inc({ target });
        // Exponential backoff with full jitter, so replicas retrying together do not stampede.
        await sleep(Math.random() * Math.min(2000, 100 * 2 ** attempt));
      }
    }
  }

  private once<T>(method: string, path: string, body?: unknown): Promise<T> {
    const url = new URL(path.replace(/^\//, ""), this.base);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const timeoutMs = this.opts.timeoutMs ?? 10_000;
    const what = `qdrant ${method} ${url.pathname}`;
    return new Promise<T>((resolve, reject) => {
      const req = this.send(
        url,
        {
          method,
          agent: this.agent,
          headers: {
            accept: "application/json",
            ...(payload ? { "content-type": "application/json", "content-length": payload.length } : {}),
            ...(this.opts.apiKey ? { "api-key": this.opts.apiKey } : {}),
          },
        },
        (res) => {
          readBody(res).then((text) => {
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) {
              try {
                resolve((JSON.parse(text) as { result: T }).result);
              } catch {
                reject(new QdrantCallError(`${what}: unreadable response`, undefined));
              }
              return;
            }
            reject(new QdrantCallError(`${what} failed (${status}): ${errorText(status, text)}`, status));
          }, reject);
        },
      );
      // One deadline for the whole attempt: a frozen server must not hold a search forever.
      const timer = setTimeout(() => {
        req.destroy(new QdrantCallError(`${what}: no answer within ${timeoutMs} ms`, undefined));
      }, timeoutMs);
      req.on("close", () => clearTimeout(timer));
      req.on("error", (err) => {
        clearTimeout(timer);
        reject(
          err instanceof QdrantCallError
            ? err
            : new QdrantCallError(`${what}: ${(err as NodeJS.ErrnoException).code ?? err.message}`, undefined),
        );
      });
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

function readBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on("data", (c: Buffer) => chunks.push(c));
    res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    res.on("error", reject);
  });
}

/** Qdrant's error text ({status: {error}}), short; 401/403 say what to check, never the key. */
function errorText(status: number, text: string): string {
  if (status === 401 || status === 403) return "the API key was refused (check QDRANT_API_KEY / QDRANT_API_KEY_FILE)";
  try {
    const parsed = JSON.parse(text) as { status?: { error?: string } };
    if (parsed.status?.error) return parsed.status.error.slice(0, 300);
  } catch {}
  return text.slice(0, 300) || "no body";
}
