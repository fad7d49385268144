// Request interception: every request a page makes (documents, sub-resources, frames, XHR,
// popups) is fetched here, in Node, through the SSRF guard's dispatcher, and handed back to
// Chromium with route.fulfill. Chromium itself never opens a connection (its proxy is a
// black hole), so the guard sees every request and connects to the address it checked.
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { inTraceContext, type TraceContext } from "@capstan/shared";
import { DocumentError, pdfToMarkdown } from "@capstan/shared/documents";
import type { BrowserContext, Route } from "playwright-core";
import { type Dispatcher, fetch } from "undici";
import { isScraperError, ScraperError } from "../errors.ts";
import { parseTargetUrl, type SsrfGuard } from "../ssrf/guard.ts";

const MEDIA_TYPES = new Set(["image", "media", "font"]);
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 10;
const DROP_REQUEST_HEADERS = new Set(["host", "connection", "content-length", "transfer-encoding", "keep-alive"]);
const DROP_RESPONSE_HEADERS = new Set(["content-encoding", "content-length", "transfer-encoding", "connection"]);
const RENDERABLE = /^(text\/|application\/(xhtml\+xml|xml|json|ld\+json|rss\+xml|atom\+xml)|image\/svg\+xml)/i;

export type RequestOutcome = "fulfilled" | "blocked_ssrf" | "blocked_media" | "failed";

/** What one scrape's interception needs and what it observed. */
export interface TaskState {
  guard: SsrfGuard;
  dispatcher: Dispatcher;
  /** An upstream proxy resolves names itself, so targets are checked before each request. */
  viaProxy: boolean;
  blockMedia: boolean;
  /** Caller-supplied headers, sent only to `extraHeadersHost` (the target's host:port). */
  extraHeaders: Record<string, string>;
  extraHeadersHost: string;
  signal: AbortSignal;
  maxBytes: number;
  /** Set when the main document failed for a reason the caller must see (blocked, unreachable, ...). */
  mainError?: ScraperError;
  /** Set when the main document answered with a redirect: the renderer navigates there next. */
  redirect?: string;
  mainContentType?: string;
  /** Status of the last main document fulfilled. */
  mainStatus?: number;
  mainStatusText?: string;
  /** Called when the main document failed or redirected (the renderer waits on it). */
  wake?: () => void;
  blockedRequests: number;
  /**
   * The render request's trace context. Playwright calls the route handler from its connection to
   * Chromium, outside any request; the page's fetches run in this context so that they are spans
   * of the render request's trace and send its `traceparent`.
   */
  traceContext: TraceContext;
}

export interface FetchedResource {
  status: number;
  statusText: string;
  headers: Record<string, string>;
  body: Buffer;
}

function unwrapFetchError(err: unknown, url: URL, signal: AbortSignal): ScraperError {
  if (isScraperError(err)) return err;
  const cause = (err as { cause?: unknown }).cause;
  if (isScraperError(cause)) return cause;
  if (signal.aborted) return new ScraperError("TIMEOUT", [0, `fetching ${url.origin}`]);
  const code = (cause as { code?: string } | undefined)?.code ?? (err as Error).message;
  return new ScraperError("UNREACHABLE", [`${url.host}: ${code}`]);
}

async function readLimited(body: WebReadableStream<Uint8Array> | null, max: number, url: URL): Promise<Buffer> {
  if (!body) return Buffer.alloc(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = (await reader.read()) as { done: boolean; value?: Uint8Array };
    if (done || !value) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw new ScraperError("UPSTREAM_ERROR", [`${url.host}: response larger than ${max} bytes`]);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** A redirect's target: an http(s) URL, else refused by the guard (data:, file:, javascript:, ...). */
function redirectTarget(state: TaskState, location: string, from: URL): string {
  let next: URL;
  try {
    next = new URL(location, from);
  } catch {
    throw new ScraperError("UNREACHABLE", [`${from.host}: redirect to an invalid URL`]);
  }
  if (next.protocol !== "http:" && next.protocol !== "https:") {
    throw state.guard.refuse("redirect", next.protocol, `redirect to a ${next.protocol} URL`);
  }
  return next.href;
}

/** One guarded fetch; follows redirects (each hop guarded) unless followRedirects is false. */
export async function guardedFetch(
  state: TaskState,
  rawUrl: string,
  init: { method: string; headers: Record<string, string>; body?: Buffer | undefined },
  followRedirects: boolean,
): Promise<FetchedResource & { location?: string }> {
  let url = parseTargetUrl(rawUrl);
  let { method, body } = init;
  for (let hop = 0; ; hop++) {
    if (state.viaProxy) await state.guard.check(url, "request");
    let res: Awaited<ReturnType<typeof fetch>>;
    try {
      res = await fetch(url, {
        method,
        headers: url.host === state.extraHeadersHost ? { ...init.headers, ...state.extraHeaders } : init.headers,
        body: method === "GET" || method === "HEAD" ? undefined : body,
        redirect: "manual",
        dispatcher: state.dispatcher,
        signal: state.signal,
      });
    } catch (err) {
      throw unwrapFetchError(err, url, state.signal);
    }
    const location = res.headers.get("location");
    if (REDIRECTS.has(res.status) && location) {
      await res.body?.cancel().catch(() => {});
      const next = redirectTarget(state, location, url);
      if (!followRedirects) {
        return { status: res.status, statusText: res.statusText, headers: {}, body: Buffer.alloc(0), location: next };
      }
      if (hop >= MAX_REDIRECTS) throw new ScraperError("UNREACHABLE", [`${url.host}: too many redirects`]);
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === "POST")) {
        method = "GET";
        body = undefined;
      }
      url = parseTargetUrl(next);
      continue;
    }
    const headers: Record<string, string> = {};
    res.headers.forEach((value, name) => {
      if (!DROP_RESPONSE_HEADERS.has(name) && name !== "set-cookie") headers[name] = value;
    });
    const cookies = res.headers.getSetCookie();
    if (cookies.length) headers["set-cookie"] = cookies.join("\n");
    const data = await readLimited(res.body, state.maxBytes, url);
    return { status: res.status, statusText: res.statusText, headers, body: data };
  }
}

async function handle(route: Route, state: TaskState | undefined, onRequest: (o: RequestOutcome) => void) {
  const request = route.request();
  const url = request.url();
  if (!state || !/^https?:/i.test(url)) {
    onRequest("blocked_ssrf");
    return route.abort("blockedbyclient");
  }
  if (state.blockMedia && MEDIA_TYPES.has(request.resourceType())) {
    onRequest("blocked_media");
    return route.abort("blockedbyclient");
  }
  let isMain = false;
  try {
    isMain = request.isNavigationRequest() && request.frame().parentFrame() === null;
  } catch {
    isMain = false;
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(await request.allHeaders())) {
    if (!name.startsWith(":") && !DROP_REQUEST_HEADERS.has(name)) headers[name] = value;
  }
  try {
    const res = await inTraceContext(state.traceContext, () =>
      guardedFetch(
        state,
        url,
        { method: request.method(), headers, body: request.postDataBuffer() ?? undefined },
        !isMain,
      ),
    );
    if (isMain && res.location) {
      state.redirect = res.location;
      onRequest("fulfilled");
      state.wake?.();
      return route.abort("aborted");
    }
    if (isMain) {
      let type = res.headers["content-type"] ?? "";
      if (/^application\/pdf\b/i.test(type)) {
        // A PDF (fetched above through the guard, within maxBytes and the scrape's signal) is
        // converted here and shown to Chromium as the Markdown it becomes, which passes through.
        Object.assign(res, await pdfAsMarkdown(res.body, state.signal));
        type = res.headers["content-type"] as string;
      }
      state.mainContentType = type;
      if (type && !RENDERABLE.test(type)) {
        state.mainError = new ScraperError("UNSUPPORTED_CONTENT", [type.split(";")[0] ?? type]);
        onRequest("failed");
        state.wake?.();
        return route.abort("blockedbyclient");
      }
      state.mainStatus = res.status;
      state.mainStatusText = res.statusText;
    }
    onRequest("fulfilled");
    return route.fulfill({ status: res.status, headers: res.headers, body: res.body });
  } catch (err) {
    const error = isScraperError(err) ? err : new ScraperError("UNREACHABLE", [(err as Error).message]);
    if (error.code === "BLOCKED_TARGET" || error.code === "BAD_URL") {
      state.blockedRequests++;
      onRequest("blocked_ssrf");
    } else {
      onRequest("failed");
    }
    if (isMain) {
      state.mainError = error;
      state.wake?.();
    }
    return route.abort(error.code === "BLOCKED_TARGET" ? "blockedbyclient" : "failed").catch(() => {});
  }
}

/** A PDF response as its Markdown (text/markdown); a PDF that cannot be read is a clear 415. */
async function pdfAsMarkdown(pdf: Buffer, signal: AbortSignal) {
  try {
    const { markdown } = await pdfToMarkdown(pdf, { signal });
    return { headers: { "content-type": "text/markdown; charset=utf-8" }, body: Buffer.from(markdown) };
  } catch (err) {
    if (err instanceof DocumentError)
      throw new ScraperError("UNSUPPORTED_CONTENT", [`application/pdf (${err.message})`]);
    throw err;
  }
}

/** Installs interception on a context; `stateOf` returns the scrape running in it, if any. */
export async function intercept(
  context: BrowserContext,
  stateOf: (context: BrowserContext) => TaskState | undefined,
  onRequest: (outcome: RequestOutcome) => void,
): Promise<void> {
  await context.route("**/*", (route) =>
    handle(route, stateOf(context), onRequest).catch(() => {
      // The page went away while the request was in flight.
    }),
  );
  // WebSockets are not scraped content; closing them keeps every connection under the guard.
  await context.routeWebSocket(/.*/, (ws) => {
    onRequest("blocked_ssrf");
    void ws.close({ code: 1008, reason: "websockets are disabled by the scraper" });
  });
}
