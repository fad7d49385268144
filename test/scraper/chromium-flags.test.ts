// The browser the rendering service launches: Debian's headless shell, with Playwright's
// disabled features kept (Chromium honours only the last --disable-features switch) plus
// RenderDocument; and a pooled page's consecutive same-site scrapes each get a fresh document.
import { readdirSync, readFileSync } from "node:fs";
import { scraperConfig } from "@capstan/scraper";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Json, post, type Scraper, type Site, startScraper, startSite } from "./helpers.ts";

let site: Site;
let scraper: Scraper;

/** argv of every descendant of this process that Playwright launched (it talks over a pipe). */
function launchedBrowsers(): string[][] {
  const parent = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // process gone
    }
  }
  const descends = (pid: number): boolean => {
    for (let p = parent.get(pid); p && p > 1; p = parent.get(p)) if (p === process.pid) return true;
    return false;
  };
  const out: string[][] = [];
  for (const pid of parent.keys()) {
    if (!descends(pid)) continue;
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
      if (argv.includes("--remote-debugging-pipe")) out.push(argv);
    } catch {
      // process gone
    }
  }
  return out;
}

const features = (argv: string[]) =>
  argv.filter((a) => a.startsWith("--disable-features=")).map((a) => a.slice("--disable-features=".length).split(","));

beforeAll(async () => {
  site = await startSite();
  for (const n of [1, 2]) {
    site.route(
      `/doc${n}`,
      `<html><head><title>Doc ${n}</title></head><body><main><h1>Doc ${n}</h1><p id="seen"></p></main>
      <script>
        document.getElementById("seen").textContent = "leftover " + typeof window.__capstanLeak;
        window.__capstanLeak = ${n};
      </script></body></html>`,
    );
  }
  scraper = await startScraper({
    workerConcurrency: 1,
    allowedHosts: [`127.0.0.1:${site.port}`, `localhost:${site.port}`],
  });
});

afterAll(async () => {
  await scraper?.close();
  await site?.close();
});

describe("Chromium launch", () => {
  it("runs the configured Chromium (the headless shell by default) with Playwright's disabled features and RenderDocument off", () => {
    const browsers = launchedBrowsers();
    expect(browsers.length).toBeGreaterThan(0);
    for (const argv of browsers) {
      expect(argv[0]).toBe(scraperConfig({}).chromiumPath);
      const lists = features(argv);
      // Playwright's own switch comes first; Chromium applies only the last one.
      expect(lists.length).toBeGreaterThanOrEqual(2);
      const playwrights = lists[0] ?? [];
      const effective = lists.at(-1) ?? [];
      expect(playwrights.length).toBeGreaterThan(0);
      for (const name of playwrights) expect(effective, `Playwright disables ${name}`).toContain(name);
      expect(effective).toContain("RenderDocument");
    }
  });

  it("gives each scrape on the one pooled page a fresh document and global, same-site or cross-site", async () => {
    // 127.0.0.1 and localhost are different sites: the last two navigations change process.
    const other = `http://localhost:${site.port}`;
    for (const [origin, n] of [
      [site.origin, 1],
      [site.origin, 2],
      [site.origin, 1],
      [other, 2],
      [site.origin, 2],
      [site.origin, 2], // the same URL again: loaded anew, not a same-document navigation
    ] as const) {
      const { status, body } = await post(scraper.url, "/scrape", { url: `${origin}/doc${n}` });
      expect(status).toBe(200);
      const data = body.data as Json;
      expect(data.metadata.title).toBe(`Doc ${n}`);
      expect(data.markdown).toContain(`# Doc ${n}`);
      expect(data.markdown).toContain("leftover undefined");
    }
  });
});
