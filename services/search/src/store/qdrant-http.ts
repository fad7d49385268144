// A small client for Qdrant's REST API on node:http(s). Written here instead of using
// @qdrant/js-client-rest because that client builds its own connection pool and offers no way to
// trust a private CA (a secured in-cluster Qdrant), and because every call needs the shared
// resilience policy (timeout per attempt, bounded full-jitter retries, Retry-After, metrics) and
// error messages that never carry the API key. `url` may list the peers of a Qdrant cluster
// (comma-separated): calls go to one of them until it fails to answer (no connection, a timeout),
// and the next attempt goes to the next peer, so one lost peer costs a retry, not a failure.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { OutboundMetrics } from "@capstan/shared";
import { type Failure, OutboundPolicy } from "@capstan/shared/resilience";
import { StoreError } from "./types.ts";

export interface QdrantHttpOptions {
  /** One URL, or the peers of a cluster as a comma-separated list. */
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
  retryAfter: string | undefined;
  constructor(message: string, status: number | undefined, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "QdrantCallError";
    this.status = status;
  }
}

/** Network errors, timeouts, 429 and 5xx are worth another attempt. */
function classify(err: unknown): Failure {
  const e = err as QdrantCallError;
  const retry = e.status === undefined || e.status === 429 || e.status >= 500;
  return { retry, outcome: e.status ? `http_${e.status}` : "error", retryAfter: e.retryAfter };
}

export class QdrantHttp {
  private readonly bases: URL[];
  /** The peer calls go to; moved on when it does not answer. */
  private current = 0;
  private readonly agent: HttpAgent;
  private readonly send: typeof httpRequest;
  private readonly opts: QdrantHttpOptions;
  private readonly policy: OutboundPolicy;

  constructor(opts: QdrantHttpOptions) {
    this.opts = opts;
    this.policy = new OutboundPolicy({
      target: "qdrant",
      timeoutMs: opts.timeoutMs ?? 10_000,
      maxAttempts: (opts.maxRetries ?? 2) + 1,
      baseDelayMs: 100,
      maxDelayMs: 2_000,
      classify,
      metrics: opts.metrics,
      timeoutError: (ms, target) => new QdrantCallError(`${target}: no answer within ${ms} ms`, undefined),
    });
    this.bases = opts.url
      .split(",")
      .map((u) => u.trim())
      .filter(Boolean)
      .map((u) => new URL(u.endsWith("/") ? u : `${u}/`));
    const tls = this.bases[0]?.protocol === "https:";
    // Keep-alive pools: a search is one small request, a fresh TCP (and TLS) handshake would dominate it.
    this.agent = tls
      ? new HttpsAgent({ keepAlive: true, maxSockets: 32, ...(opts.ca ? { ca: opts.ca } : {}) })
      : new HttpAgent({ keepAlive: true, maxSockets: 32 });
    this.send = tls ? (httpsRequest as typeof httpRequest) : httpRequest;
  }

  /** Where the server is, without credentials (for logs). */
  get origin(): string {
    return this.bases.map((b) => b.origin).join(",");
  }

  /** One REST call with retries; `op` names it in metrics and errors. Returns Qdrant's `result`. */
  call<T>(op: string, method: string, path: string, body?: unknown): Promise<T> {
    return this.policy.execute(({ signal }) => this.once<T>(method, path, body, signal), { target: `qdrant_${op}` });
  }

  /** One attempt; the policy's signal ends it at its timeout (a frozen server holds nothing). */
  private once<T>(method: string, path: string, body: unknown, signal: AbortSignal): Promise<T> {
    const peer = this.current;
    const url = new URL(path.replace(/^\//, ""), this.bases[peer]);
    // No answer from this peer (refused, reset, timed out): the next attempt goes to the next one.
    const moveOn = () => {
      if (this.current === peer) this.current = (peer + 1) % this.bases.length;
    };
    signal.addEventListener("abort", moveOn, { once: true });
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const what = `qdrant ${method} ${url.pathname}`;
    return new Promise<T>((resolve, reject) => {
      const req = this.send(
        url,
        {
          method,
          agent: this.agent,
          signal,
          headers: {
            accept: "application/json",
            ...(payload ? { "content-type": "application/json", "content-length": payload.length } : {}),
            ...(this.opts.apiKey ? { "api-key": this.opts.apiKey } : {}),
          },
        },
        (res) => {
          // The peer answered: a later abort (the policy ends every attempt's signal) is not its fault.
          signal.removeEventListener("abort", moveOn);
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
            const err = new QdrantCallError(`${what} failed (${status}): ${errorText(status, text)}`, status);
            const retryAfter = res.headers["retry-after"];
            if (typeof retryAfter === "string") err.retryAfter = retryAfter;
            reject(err);
          }, reject);
        },
      );
      req.on("error", (err) => {
        moveOn();
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
