// A bounded pool of Chromium pages. One browser process; each slot is a page in its own
// browser context (cookies and storage isolated from the other slots), reused across scrapes
// because opening a page costs far more than navigating one (cookies are cleared in between;
// the next scrape's navigation replaces the document), and replaced after
// `recycleAfter` scrapes, after any failure, or when it navigated on its own while idle. A browser that dies is relaunched; scrapes in
// flight on it fail with RENDERER_UNAVAILABLE and the next ones get fresh pages.
import { createServer, type Server } from "node:net";
import type { Logger } from "@capstan/shared";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { ScraperError } from "../errors.ts";

export const VIEWPORT = { width: 1280, height: 800 } as const;

/**
 * Playwright's own `--disable-features` list (playwright-core 1.65). Chromium keeps only the last
 * `--disable-features` switch on its command line, so the scraper's switch repeats this list;
 * test/scraper/chromium-flags.test.ts fails when a Playwright upgrade adds a name missing here.
 */
export const PLAYWRIGHT_DISABLED_FEATURES = [
  "AvoidUnnecessaryBeforeUnloadCheckSync",
  "DestroyProfileOnBrowserClose",
  "HttpsUpgrades",
  "HttpsFirstBalancedModeAutoEnable",
  "LensOverlay",
  "MediaRouter",
  "PaintHolding",
  "ThirdPartyStoragePartitioning",
  "AvoidCorsURLLoaderRestartOnRedirect",
  "TcpPortRandomizationWin",
  "OptimizationHints",
  "NetworkTimeServiceQuerying",
  "AimEnabled",
  "PreconnectToSearch",
  "msForceBrowserSignIn",
  "msEdgeUpdateLaunchServicesPreferredVersion",
] as const;

/**
 * RenderDocument makes every cross-document navigation build a new frame, widget and compositor
 * in the renderer. Off, a pooled page's next same-site scrape reuses them: Chromium's CPU per
 * scrape fell from about 90 to about 57 ms (docs/benchmarks.md). Each slot is its own browser
 * context, so nothing is shared between scrapes of different contexts either way.
 */
export const DISABLED_FEATURES = [...PLAYWRIGHT_DISABLED_FEATURES, "RenderDocument"] as const;

const CHROMIUM_FLAGS = [
  `--disable-features=${DISABLED_FEATURES.join(",")}`,
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-gpu",
  "--disable-quic",
  "--disable-dev-shm-usage",
  "--disable-default-apps",
  "--disable-extensions",
  "--dns-prefetch-disable",
  "--mute-audio",
  "--hide-scrollbars",
  "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
];

export interface PageSlot {
  context: BrowserContext;
  page: Page;
  uses: number;
  generation: number;
}

export interface BrowserPoolOptions {
  chromiumPath: string;
  /** Chromium's own sandbox; undefined: on unless this process is root. */
  chromiumSandbox?: boolean | undefined;
  /** Pages rendering at once (WORKER_CONCURRENCY). */
  size: number;
  recycleAfter: number;
  logger: Logger;
  /** Installs the request interception of a new context. */
  setupContext: (context: BrowserContext) => Promise<void>;
  onRestart?: () => void;
  onPagesInUse?: (n: number) => void;
  /** A request that did not go through interception reached the black-hole proxy. */
  onEscaped?: () => void;
  /** False for an idle page that must not serve another scrape (it navigated on its own). */
  reusable?: (slot: PageSlot) => boolean;
}

export class BrowserPool {
  private browser: Browser | undefined;
  private launching: Promise<Browser> | undefined;
  private generation = 0;
  private idle: PageSlot[] = [];
  private inUse = 0;
  private closed = false;
  private blackhole: Server | undefined;
  private blackholePort = 0;

  private readonly opts: BrowserPoolOptions;

  constructor(opts: BrowserPoolOptions) {
    this.opts = opts;
  }

  get pagesInUse(): number {
    return this.inUse;
  }

  get connected(): boolean {
    return this.browser?.isConnected() ?? false;
  }

  async start(): Promise<void> {
    // Everything the browser fetches is fulfilled by the interception; a request that escaped
    // it would reach this listener, which closes it, and never the network.
    this.blackhole = createServer((socket) => {
      socket.once("data", (chunk: Buffer) => {
        const line = chunk.toString("latin1").split("\r\n")[0]?.slice(0, 200);
        this.opts.logger.debug({ request: line }, "a browser request outside interception was dropped");
        this.opts.onEscaped?.();
        socket.destroy();
      });
      socket.on("error", () => {});
      socket.setTimeout(5_000, () => socket.destroy());
    });
    await new Promise<void>((resolve) => this.blackhole?.listen(0, "127.0.0.1", resolve));
    const addr = this.blackhole.address();
    this.blackholePort = typeof addr === "object" && addr ? addr.port : 0;
    await this.ensureBrowser();
  }

  private ensureBrowser(): Promise<Browser> {
    if (this.closed) return Promise.reject(new ScraperError("RENDERER_UNAVAILABLE", ["shutting down"]));
    if (this.browser?.isConnected()) return Promise.resolve(this.browser);
    this.launching ??= this.launch().finally(() => {
      this.launching = undefined;
    });
    return this.launching;
  }

  private async launch(): Promise<Browser> {
    const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
    const started = Date.now();
    // Playwright gives every launch a fresh temporary user-data-dir and removes it on close.
    const browser = await chromium
      .launch({
        executablePath: this.opts.chromiumPath,
        headless: true,
        chromiumSandbox: this.opts.chromiumSandbox ?? !isRoot,
        timeout: 60_000,
        args: [
          ...CHROMIUM_FLAGS,
          `--proxy-server=http://127.0.0.1:${this.blackholePort}`,
          "--proxy-bypass-list=<-loopback>",
        ],
      })
      .catch((err: Error) => {
        throw new ScraperError("RENDERER_UNAVAILABLE", [`cannot launch Chromium: ${err.message.split("\n")[0]}`]);
      });
    const generation = ++this.generation;
    this.idle = [];
    browser.on("disconnected", () => {
      if (this.closed || generation !== this.generation) return;
      this.opts.logger.error({ generation }, "Chromium disconnected; relaunching");
      this.browser = undefined;
      this.idle = [];
      this.opts.onRestart?.();
      this.ensureBrowser().catch((err: Error) => this.opts.logger.error({ err: err.message }, "relaunch failed"));
    });
    this.browser = browser;
    this.opts.logger.info({ ms: Date.now() - started, generation }, "Chromium launched");
    return browser;
  }

  private async newSlot(): Promise<PageSlot> {
    const browser = await this.ensureBrowser();
    const context = await browser.newContext({
      viewport: VIEWPORT,
      serviceWorkers: "block",
      acceptDownloads: false,
      javaScriptEnabled: true,
    });
    try {
      await this.opts.setupContext(context);
      const page = await context.newPage();
      page.on("dialog", (dialog) => void dialog.dismiss().catch(() => {}));
      context.on("page", (p) => {
        if (p !== page) void p.close().catch(() => {}); // popups are not rendered
      });
      return { context, page, uses: 0, generation: this.generation };
    } catch (err) {
      await context.close().catch(() => {});
      throw err;
    }
  }

  /** Opens pages up to the pool size ahead of the first scrapes. */
  async warm(): Promise<void> {
    const slots = await Promise.all(Array.from({ length: this.opts.size }, () => this.newSlot()));
    this.idle.push(...slots);
  }

  /** Runs fn on a page; the caller bounds concurrency to `size` (see Limiter). */
  async withPage<T>(fn: (slot: PageSlot) => Promise<T>): Promise<T> {
    let slot: PageSlot | undefined;
    while (!slot) {
      const candidate = this.idle.pop();
      if (!candidate) {
        try {
          slot = await this.newSlot();
        } catch (err) {
          throw this.translate(err);
        }
      } else if (
        candidate.generation === this.generation &&
        !candidate.page.isClosed() &&
        (this.opts.reusable?.(candidate) ?? true)
      ) {
        slot = candidate;
      } else {
        void candidate.context.close().catch(() => {});
      }
    }
    this.inUse++;
    this.opts.onPagesInUse?.(this.inUse);
    let healthy = false;
    try {
      const result = await fn(slot);
      healthy = true;
      return result;
    } catch (err) {
      // A page that failed is never reused, whatever the failure: an aborted or refused
      // navigation can leave it committing an error page or still loading, which would
      // interrupt the next scrape's navigation.
      throw this.translate(err);
    } finally {
      this.inUse--;
      this.opts.onPagesInUse?.(this.inUse);
      void this.release(slot, healthy);
    }
  }

  private translate(err: unknown): Error {
    if (err instanceof ScraperError) return err;
    if (!this.browser?.isConnected()) {
      return new ScraperError("RENDERER_UNAVAILABLE", ["the browser crashed during the scrape"], { retryAfter: 1 });
    }
    return err as Error;
  }

  private async release(slot: PageSlot, healthy: boolean): Promise<void> {
    slot.uses++;
    const reusable =
      healthy &&
      !this.closed &&
      (this.opts.reusable?.(slot) ?? true) &&
      slot.generation === this.generation &&
      slot.uses < this.opts.recycleAfter &&
      this.idle.length < this.opts.size;
    if (reusable) {
      try {
        // No navigation to about:blank here: it cost Chromium as much CPU as the scrape's own
        // navigation. The next scrape navigates the page away (Renderer.renderOn), and until
        // then every request the idle page makes is refused by the interception (no task).
        await slot.context.clearCookies();
        this.idle.push(slot);
        return;
      } catch {
        // fall through: replace it
      }
    }
    await slot.context.close().catch(() => {});
  }

  /** Kills the browser process (tests and chaos drills use it to exercise crash recovery). */
  async crash(): Promise<void> {
    const browser = this.browser;
    if (!browser) return;
    const cdp = await browser.newBrowserCDPSession();
    await cdp.send("Browser.crash").catch(() => {});
  }

  async close(): Promise<void> {
    this.closed = true;
    const browser = this.browser;
    this.browser = undefined;
    this.idle = [];
    await browser?.close().catch(() => {});
    await new Promise<void>((resolve) => (this.blackhole ? this.blackhole.close(() => resolve()) : resolve()));
  }
}
