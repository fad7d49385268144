// Renders one URL on a pooled page: guarded navigation (redirects followed hop by hop, each
// checked by the guard), the load event, an optional wait, a screenshot, the serialised DOM.
import { activeTraceContext, type Logger } from "@capstan/shared";
import type { BrowserContext, CDPSession, Page } from "playwright-core";
import type { Dispatcher } from "undici";
import type { ScraperConfig } from "../config.ts";
import { isScraperError, ScraperError } from "../errors.ts";
import { Limiter } from "../limiter.ts";
import type { RenderMetrics } from "../metrics.ts";
import { parseTargetUrl, SsrfGuard } from "../ssrf/guard.ts";
import { BrowserPool } from "./browser-pool.ts";
import { intercept, type TaskState } from "./interceptor.ts";
import { NavigationWatch } from "./navigation-watch.ts";
import type { ParsedRenderRequest, RenderResponse } from "./wire.ts";

const MAX_NAV_REDIRECTS = 10;
const FORBIDDEN_HEADERS = new Set(["host", "content-length", "connection", "transfer-encoding", "cookie"]);
function withoutFragment(raw: string): string {
  const hash = raw.indexOf("#");
  return hash < 0 ? raw : raw.slice(0, hash);
}

/** True when navigating from `current` to `target` would not load a new document. */
function sameDocument(current: string, target: string): boolean {
  if (current === "about:blank") return false;
  try {
    return withoutFragment(new URL(current).href) === withoutFragment(new URL(target).href);
  } catch {
    return false;
  }
}

export interface RendererDeps {
  logger: Logger;
  metrics: RenderMetrics;
  guard?: SsrfGuard;
}

export class Renderer {
  readonly pool: BrowserPool;
  readonly limiter: Limiter;
  readonly guard: SsrfGuard;
  private readonly dispatcher: Dispatcher;
  private readonly states = new WeakMap<BrowserContext, TaskState>();
  /** One DevTools session per pooled page, for serialising the DOM (see content()). */
  private readonly sessions = new WeakMap<Page, Promise<CDPSession>>();
  private readonly watches = new WeakMap<Page, Promise<NavigationWatch>>();
  private readonly attached = new WeakMap<Page, NavigationWatch>();
  private readonly config: ScraperConfig;
  private readonly deps: RendererDeps;

  constructor(config: ScraperConfig, deps: RendererDeps) {
    this.config = config;
    this.deps = deps;
    const { metrics } = deps;
    this.guard =
      deps.guard ??
      new SsrfGuard({
        allowedHosts: config.allowedHosts,
        onBlocked: (stage, url, reason) => {
          metrics.ssrfBlocked.inc({ stage });
          deps.logger.warn({ stage, target: url, reason }, "SSRF guard refused a target");
        },
      });
    this.dispatcher = this.guard.dispatcher(config.proxy);
    this.limiter = new Limiter(config.workerConcurrency, config.maxConcurrentRequests, (_running, queued) =>
      metrics.queueDepth.set(queued),
    );
    this.pool = new BrowserPool({
      chromiumPath: config.chromiumPath,
      chromiumSandbox: config.chromiumSandbox,
      size: config.workerConcurrency,
      recycleAfter: config.pageRecycleAfter,
      logger: deps.logger,
      setupContext: (context) =>
        intercept(
          context,
          (c) => this.states.get(c),
          (outcome) => metrics.browserRequests.inc({ outcome }),
        ),
      onRestart: () => metrics.browserRestarts.inc(),
      onPagesInUse: (n) => metrics.pagesInUse.set(n),
      onEscaped: () => metrics.escapedRequests.inc(),
      reusable: (slot) => this.reusable(slot.page),
    });
  }

  async start(opts: { warm?: boolean } = {}): Promise<void> {
    await this.pool.start();
    if (opts.warm ?? true) await this.pool.warm();
  }

  async close(): Promise<void> {
    await this.pool.close();
    await this.dispatcher.destroy().catch(() => {});
  }

  async render(req: ParsedRenderRequest, signal?: AbortSignal): Promise<RenderResponse> {
    const started = performance.now();
    let outcome = "ok";
    try {
      parseTargetUrl(req.url);
      return await this.limiter.run(() => this.pool.withPage((slot) => this.renderOn(slot.page, req, signal)), {
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      outcome = isScraperError(err) ? err.code : "INTERNAL";
      throw err;
    } finally {
      this.deps.metrics.duration.observe({ outcome }, (performance.now() - started) / 1000);
    }
  }

  /** Renders `req` on a pooled page, within its budget, and leaves the page ready for the next. */
  private async renderOn(page: Page, req: ParsedRenderRequest, outer?: AbortSignal): Promise<RenderResponse> {
    const watch = await this.watch(page);
    const timeout = req.timeout ?? this.config.requestTimeoutMs;
    const budget = timeout + req.wait_after_load + 10_000;
    const controller = new AbortController();
    const onOuterAbort = () => controller.abort(outer?.reason);
    outer?.addEventListener("abort", onOuterAbort, { once: true });
    // A render past its budget (a page that hangs the renderer) loses its page.
    const watchdog = setTimeout(() => {
      controller.abort(new ScraperError("TIMEOUT", [budget, "render"]));
      void page.close().catch(() => {});
    }, budget);
    const state = this.taskState(req, controller.signal);
    const context = page.context();
    state.wake = () => watch.poke();
    this.states.set(context, state);
    watch.active = true;
    try {
      await this.load(page, watch, state, req, controller.signal, timeout);
      if (controller.signal.aborted) throw this.abortError(controller.signal, timeout);
      if (!/^https?:/.test(page.url())) throw new ScraperError("UNREACHABLE", ["the page ended in an error document"]);
      return await this.answer(page, state, req);
    } catch (err) {
      if (controller.signal.aborted && !isScraperError(err)) throw this.abortError(controller.signal, timeout);
      throw err;
    } finally {
      clearTimeout(watchdog);
      outer?.removeEventListener("abort", onOuterAbort);
      this.states.delete(context);
      watch.active = false;
      // A page still on its way somewhere would interrupt the next scrape's navigation.
      if (watch.navigating) watch.spoiled = true;
      // Fetches the page still has in flight (a resource that never answers) end with the task.
      if (!controller.signal.aborted) controller.abort(new ScraperError("TIMEOUT", [0, "scrape finished"]));
    }
  }

  /** What the request interception (interceptor.ts) needs to know of this render. */
  private taskState(req: ParsedRenderRequest, signal: AbortSignal): TaskState {
    const extraHeaders: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers ?? {})) {
      if (!FORBIDDEN_HEADERS.has(name.toLowerCase())) extraHeaders[name.toLowerCase()] = value;
    }
    return {
      guard: this.guard,
      dispatcher: this.dispatcher,
      viaProxy: Boolean(this.config.proxy.server),
      blockMedia: req.block_media ?? this.config.blockMedia,
      extraHeaders,
      extraHeadersHost: new URL(req.url).host,
      signal,
      maxBytes: this.config.maxResourceBytes,
      blockedRequests: 0,
      traceContext: activeTraceContext(),
    };
  }

  /**
   * Navigates to `req.url` and waits until the page stays on its final document, within `timeout`.
   * Client-side navigation (meta refresh, Refresh header, script, form) ends in the final
   * document or in its error; sub-resources get a bounded settle time once a document is ready.
   */
  private async load(
    page: Page,
    watch: NavigationWatch,
    state: TaskState,
    req: ParsedRenderRequest,
    signal: AbortSignal,
    timeout: number,
  ): Promise<void> {
    const deadline = Date.now() + timeout;
    const remaining = () => Math.max(1, deadline - Date.now());
    const redirects = { count: 0 };
    await this.navigate(page, state, req.url, redirects, signal, timeout, remaining);
    for (let waited = false; ; ) {
      await watch.until(() => !watch.navigating, remaining(), signal);
      if (signal.aborted) throw this.abortError(signal, timeout);
      this.throwIfFailed(state);
      if (state.redirect) {
        await this.navigate(page, state, state.redirect, redirects, signal, timeout, remaining);
        continue;
      }
      if (watch.navigating) throw new ScraperError("TIMEOUT", [timeout, "page load"]);
      await watch.until(() => !watch.loading || watch.navigating, Math.min(remaining(), this.config.settleTimeoutMs));
      if (!waited && req.wait_after_load > 0) await page.waitForTimeout(req.wait_after_load);
      waited = true;
      await watch.nudge(Math.min(remaining(), 2_000));
      this.throwIfFailed(state);
      if (!watch.navigating && !state.redirect) break;
    }
  }

  /** The loaded page as the answer: its DOM, its main document's status, a screenshot if asked. */
  private async answer(page: Page, state: TaskState, req: ParsedRenderRequest): Promise<RenderResponse> {
    const screenshot = req.screenshot
      ? (await page.screenshot({ type: "png", fullPage: req.full_page_screenshot, timeout: 30_000 })).toString("base64")
      : null;
    const content = await this.content(page);
    const status = state.mainStatus ?? 200;
    return {
      content,
      pageStatusCode: status,
      pageError: status >= 400 ? state.mainStatusText || `HTTP ${status}` : null,
      finalUrl: page.url(),
      contentType: state.mainContentType ?? null,
      screenshot,
      blockedRequests: state.blockedRequests,
    };
  }

  /**
   * One navigation of the main frame, redirects followed hop by hop (the interception answers a
   * redirect by aborting and naming its target; each hop is checked by the guard there).
   */
  private async navigate(
    page: Page,
    state: TaskState,
    url: string,
    redirects: { count: number },
    signal: AbortSignal,
    timeout: number,
    remaining: () => number,
  ): Promise<void> {
    let target = url;
    let retriedInterrupted = false;
    for (;;) {
      state.redirect = undefined;
      state.mainError = undefined;
      try {
        // A pooled page still shows the previous scrape's document. A URL that differs from it
        // only by the fragment would be a same-document navigation (no load, the old DOM).
        if (sameDocument(page.url(), target)) await page.goto("about:blank", { timeout: remaining() });
        await page.goto(target, { waitUntil: "domcontentloaded", timeout: remaining() });
        return;
      } catch (err) {
        if (state.mainError) throw state.mainError;
        if (signal.aborted) throw this.abortError(signal, timeout);
        if (state.redirect) {
          if (++redirects.count > MAX_NAV_REDIRECTS) throw new ScraperError("UNREACHABLE", ["too many redirects"]);
          target = state.redirect;
          continue;
        }
        if ((err as Error).name === "TimeoutError") throw new ScraperError("TIMEOUT", [timeout, "page load"]);
        // The document this navigation loaded started one of its own at once (a script's
        // location change while parsing): the settle loop follows it.
        if (!retriedInterrupted && /interrupted by another navigation/.test((err as Error).message)) {
          retriedInterrupted = true;
          return;
        }
        throw this.navigationError(err as Error);
      }
    }
  }

  /** The main document failed (blocked, unreachable, not renderable): the scrape fails with it. */
  private throwIfFailed(state: TaskState): void {
    if (state.mainError) throw state.mainError;
  }

  private watch(page: Page): Promise<NavigationWatch> {
    let watch = this.watches.get(page);
    if (!watch) {
      watch = this.session(page)
        .then((session) => NavigationWatch.attach(session))
        .then((w) => {
          this.attached.set(page, w);
          return w;
        });
      this.watches.set(page, watch);
      watch.catch(() => this.watches.delete(page));
    }
    return watch;
  }

  /** Whether a pooled page may serve another scrape: not when it navigated on its own since. */
  reusable(page: Page): boolean {
    return !this.attached.get(page)?.spoiled;
  }

  private session(page: Page): Promise<CDPSession> {
    let pending = this.sessions.get(page);
    if (!pending) {
      pending = page.context().newCDPSession(page);
      this.sessions.set(page, pending);
      pending.catch(() => this.sessions.delete(page));
    }
    return pending;
  }

  /**
   * The serialised DOM: the markup page.content() gives (doctype + documentElement), plus any
   * comment outside <html>. page.content() injects
   * Playwright's whole injected script (hundreds of KiB, compiled by Chromium) into every new
   * document, which was the largest single cost per scrape. DevTools serialises the document
   * in C++ for two small messages, out of the page's reach (its scripts cannot redefine what
   * is read). page.content() stays the fallback; it fails while a script is navigating the
   * page, so the load after that is waited for once.
   */
  private async content(page: Page): Promise<string> {
    try {
      return await this.serialise(page);
    } catch {
      // fall back to Playwright's own serialisation
    }
    try {
      return await page.content();
    } catch {
      await page.waitForLoadState("load", { timeout: 5_000 }).catch(() => {});
      return await page.content();
    }
  }

  private async serialise(page: Page): Promise<string> {
    const session = await this.session(page);
    // depth 0: only the document node is pushed, so DevTools tracks no other node of the page.
    const { root } = await session.send("DOM.getDocument", { depth: 0 });
    const { outerHTML } = await session.send("DOM.getOuterHTML", { nodeId: root.nodeId });
    // getDocument switched the DOM agent on; off again, it stops watching the page's mutations
    // until the next scrape. Not awaited: nothing depends on it.
    void session.send("DOM.disable").catch(() => {});
    if (typeof outerHTML !== "string" || outerHTML === "") throw new Error("cannot serialise the document");
    return outerHTML;
  }

  private abortError(signal: AbortSignal, timeout: number): ScraperError {
    const reason = signal.reason as unknown;
    return isScraperError(reason) ? reason : new ScraperError("TIMEOUT", [timeout, "cancelled"]);
  }

  private navigationError(err: Error): ScraperError {
    const line = err.message.split("\n")[0] ?? err.message;
    if (/Target (page, context or browser )?(has been )?closed|Browser closed|crash/i.test(line)) {
      return new ScraperError("RENDERER_UNAVAILABLE", ["the page crashed or the browser went away"], {
        retryAfter: 1,
      });
    }
    // Playwright's message names URLs (this navigation's, and another one's when interrupted):
    // only Chromium's error code is passed on.
    const net = /net::(ERR_[A-Z_]+)/.exec(line)?.[1];
    return new ScraperError("UNREACHABLE", [net ?? "navigation failed"]);
  }
}
