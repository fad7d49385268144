// What the main frame of a pooled page is doing, from Chromium's own DevTools events: whether a
// navigation is on its way (requested by a script, a meta refresh, a Refresh header or a form,
// not yet committed) and whether the current document is still loading. The renderer waits on
// it so that a scrape ends in the final document, and the pool retires a page that started a
// navigation while no scrape was running on it (its next scrape would be interrupted).
//
// Events of one DevTools session arrive in order, so a navigation the page requested before an
// evaluation's answer is known when that answer arrives (see nudge()).
import type { CDPSession } from "playwright-core";

export class NavigationWatch {
  /** A navigation was requested or started and has neither committed nor been given up. */
  navigating = false;
  /** The main frame is loading (from navigation start to its load event or a stop). */
  loading = false;
  /** A navigation began while no scrape was running: the page is not reused. */
  spoiled = false;
  /** True while a scrape runs on the page. */
  active = false;
  private readonly session: CDPSession;
  private readonly mainFrameId: string;
  private waiters: (() => void)[] = [];

  private constructor(session: CDPSession, mainFrameId: string) {
    this.session = session;
    this.mainFrameId = mainFrameId;
  }

  static async attach(session: CDPSession): Promise<NavigationWatch> {
    const { frameTree } = (await session.send("Page.getFrameTree")) as { frameTree: { frame: { id: string } } };
    const watch = new NavigationWatch(session, frameTree.frame.id);
    const main = (id: string | undefined, fn: () => void) => {
      if (id !== watch.mainFrameId) return;
      fn();
      watch.wake();
    };
    const started = () => {
      watch.navigating = true;
      if (!watch.active) watch.spoiled = true;
    };
    session.on("Page.frameRequestedNavigation", (e) => {
      if (e.disposition === "currentTab") main(e.frameId, started);
    });
    session.on("Page.frameStartedNavigating", (e) => main(e.frameId, started));
    session.on("Page.frameNavigated", (e) => main(e.frame.id, () => (watch.navigating = false)));
    session.on("Page.frameStartedLoading", (e) => main(e.frameId, () => (watch.loading = true)));
    session.on("Page.frameStoppedLoading", (e) =>
      main(e.frameId, () => {
        watch.loading = false;
        watch.navigating = false;
      }),
    );
    await session.send("Page.enable");
    return watch;
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** Resolves when `done()` holds, something else wakes it (`wakeOn`), or after `ms`. */
  async until(done: () => boolean, ms: number, wakeOn?: AbortSignal): Promise<void> {
    const end = Date.now() + ms;
    while (!done() && !wakeOn?.aborted) {
      const left = end - Date.now();
      if (left <= 0) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        const onWake = () => {
          clearTimeout(timer);
          resolve();
        };
        this.waiters.push(onWake);
        wakeOn?.addEventListener("abort", onWake, { once: true });
      });
    }
  }

  /** Wakes every wait (the interception saw the main document fail or redirect). */
  poke(): void {
    this.wake();
  }

  /**
   * Lets the document run two turns of its event loop, so a navigation it scheduled on load
   * (a meta refresh of 0 seconds, a script in an onload handler) has been requested by the time
   * this resolves. A navigation destroying the context ends the evaluation early: also fine.
   */
  async nudge(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.session
        .send("Runtime.evaluate", {
          expression: "new Promise((r) => setTimeout(() => setTimeout(r, 0), 0))",
          awaitPromise: true,
        })
        .catch(() => {}),
      new Promise((r) => {
        timer = setTimeout(r, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  }
}
