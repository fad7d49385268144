// The platform-side scraper client against the real scraper: defaults, Bearer key, typed
// errors without retries on 4xx (but 408 and 429), retries with backoff on 5xx, 429 and timeouts.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createRegistry, outboundMetrics } from "@capstan/shared";
import {
  ScraperAuthError,
  ScraperBadRequestError,
  ScraperBlockedError,
  ScraperClient,
  ScraperDisabledError,
  ScraperMalformedAnswerError,
  ScraperTimeoutError,
  ScraperUnavailableError,
  scrapingSettingsSchema,
} from "@capstan/shared/clients/scraper-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../ground/ports.ts";
import { type Scraper, type Site, startScraper, startSite } from "./helpers.ts";

const KEY = "cap_scr_client-test-key-42";
let site: Site;
let scraper: Scraper;
const servers: Server[] = [];
const held: ServerResponse[] = [];

/**
 * A loopback front that answers `failures` 503s (or `status`), then forwards to the scraper; with
 * `tamper`, the scraper's 2xx answers are changed on their way back (a malformed answer).
 */
async function flakyFront(
  failures: number,
  status = 503,
  tamper?: (answer: Record<string, unknown>) => void,
): Promise<{ url: string; attempts: () => number }> {
  let attempts = 0;
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    attempts++;
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (attempts <= failures) {
      res.writeHead(status, { "content-type": "application/json", "retry-after": "0" });
      const code = status === 429 ? "JOBS_FULL" : "QUEUE_FULL";
      res.end(JSON.stringify({ success: false, error: "too many requests in flight", code }));
      return;
    }
    const upstream = await fetch(`${scraper.url}${req.url}`, {
      method: req.method ?? "GET",
      headers: req.headers as Record<string, string>,
      body: req.method === "POST" ? Buffer.concat(chunks) : undefined,
    });
    res.writeHead(upstream.status, { "content-type": "application/json" });
    const text = await upstream.text();
    if (!tamper || !upstream.ok) return void res.end(text);
    const answer = JSON.parse(text) as Record<string, unknown>;
    tamper(answer);
    res.end(JSON.stringify(answer));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, attempts: () => attempts };
}

beforeAll(async () => {
  site = await startSite();
  site.route("/doc", "<html><head><title>Doc</title></head><body><h1>Doc</h1><p>Body text.</p></body></html>");
  scraper = await startScraper({ allowedHosts: [`127.0.0.1:${site.port}`], authEnabled: true, apiKey: KEY });
});

afterAll(async () => {
  for (const res of held) res.destroy();
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
  await scraper?.close();
  await site?.close();
});

describe("ScraperClient", () => {
  it("has the platform's scraping defaults", () => {
    expect(scrapingSettingsSchema.parse({})).toEqual({
      enabled: true,
      url: "http://127.0.0.1:3002",
      timeout: 30,
      max_retries: 3,
    });
  });

  it("scrapes through the real scraper with the Bearer key", async () => {
    const registry = createRegistry({ defaultMetrics: false });
    const client = new ScraperClient({ url: scraper.url, api_key: KEY }, { metrics: outboundMetrics(registry, "t") });
    const page = await client.scrape(`${site.origin}/doc`, { extractors: { h: "h1" } });
    expect(page.metadata.title).toBe("Doc");
    expect(page.markdown).toContain("Body text.");
    expect(page.extracted).toEqual({ h: "Doc" });
    const bulk = await client.scrapeBulk([`${site.origin}/doc`, "http://10.0.0.1/"]);
    expect(bulk.map((b) => b.success)).toEqual([true, false]);
    expect((await client.health()).status).toBe("ok");
    const calls = await registry.getSingleMetric("t_outbound_requests_total")?.get();
    expect(calls?.values.find((v) => v.labels.outcome === "ok")?.value).toBe(3);
    await client.close();
  });

  it("maps 401, 403 and 400 to typed errors without retrying", async () => {
    const front = await flakyFront(0);
    const noKey = new ScraperClient({ url: front.url });
    await expect(noKey.scrape(`${site.origin}/doc`)).rejects.toBeInstanceOf(ScraperAuthError);
    expect(front.attempts()).toBe(1);
    const client = new ScraperClient({ url: front.url, api_key: KEY });
    await expect(client.scrape("http://169.254.169.254/")).rejects.toBeInstanceOf(ScraperBlockedError);
    await expect(client.scrape("ftp://x/")).rejects.toBeInstanceOf(ScraperBadRequestError);
    expect(front.attempts()).toBe(3);
    await Promise.all([noKey.close(), client.close()]);
  });

  it("retries 5xx with backoff and succeeds", async () => {
    const front = await flakyFront(2);
    const client = new ScraperClient({ url: front.url, api_key: KEY, max_retries: 3 }, { backoffBaseMs: 20 });
    const page = await client.scrape(`${site.origin}/doc`);
    expect(page.metadata.title).toBe("Doc");
    expect(front.attempts()).toBe(3);
    await client.close();
  });

  it("retries the 429 a full scraper answers (its Retry-After honoured), as every client does", async () => {
    const front = await flakyFront(1, 429);
    const client = new ScraperClient({ url: front.url, api_key: KEY, max_retries: 3 }, { backoffBaseMs: 20 });
    const page = await client.scrape(`${site.origin}/doc`);
    expect(page.metadata.title).toBe("Doc");
    expect(front.attempts()).toBe(2);
    await client.close();
  });

  it("gives up after max_retries on 5xx", async () => {
    const front = await flakyFront(100);
    const client = new ScraperClient({ url: front.url, max_retries: 2 }, { backoffBaseMs: 20 });
    const err = await client.scrape(`${site.origin}/doc`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScraperUnavailableError);
    expect((err as ScraperUnavailableError).status).toBe(503);
    expect(front.attempts()).toBe(3);
    await client.close();
  });

  it("reads the scraper's 408 (the page's time ran out, as Firecrawl answers) as a timeout, and retries it", async () => {
    const front = await flakyFront(100, 408);
    const client = new ScraperClient({ url: front.url, max_retries: 1 }, { backoffBaseMs: 20 });
    const err = await client.scrape(`${site.origin}/doc`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScraperTimeoutError);
    expect((err as ScraperTimeoutError).status).toBe(408);
    expect(front.attempts()).toBe(2);
    await client.close();
  });

  it("times out each attempt and retries timeouts", async () => {
    let attempts = 0;
    const server = createServer((_req, res) => {
      attempts++;
      held.push(res);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    servers.push(server);
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = new ScraperClient({ url, timeout: 0.5, max_retries: 1 }, { backoffBaseMs: 20 });
    await expect(client.scrape(`${site.origin}/doc`)).rejects.toBeInstanceOf(ScraperTimeoutError);
    expect(attempts).toBe(2);
    await client.close();
  });

  it("names the scraper it could not reach (a KnowledgeBase's status shows it)", async () => {
    const port = await freePort(); // nothing listens there
    const url = `http://127.0.0.1:${port}`;
    const client = new ScraperClient({ url, max_retries: 0 });
    await expect(client.scrape(`${site.origin}/doc`)).rejects.toThrow(
      `cannot reach the scraper at ${url}: ECONNREFUSED`,
    );
    await client.close();
  });

  it("rejects a malformed answer naming its first bad field, without retrying", async () => {
    const front = await flakyFront(0, 503, (answer) => {
      const data = answer.data as { metadata?: Record<string, unknown> } | undefined;
      if (data?.metadata) delete data.metadata.title; // POST /scrape's page without its title
      if (Array.isArray(answer.data) && answer.data[0]) answer.data[0].success = "yes"; // a bulk entry
      if ("creditsUsed" in answer) answer.creditsUsed = "many"; // GET /crawl/{id}
    });
    const client = new ScraperClient({ url: front.url, api_key: KEY, max_retries: 3 }, { backoffBaseMs: 20 });
    const err = await client.scrape(`${site.origin}/doc`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScraperMalformedAnswerError);
    expect((err as ScraperMalformedAnswerError).code).toBe("MALFORMED_ANSWER");
    expect((err as Error).message).toMatch(
      /^the scraper's answer to POST \/scrape is malformed: data\.metadata\.title: /,
    );
    expect(front.attempts()).toBe(1);
    await expect(client.scrapeBulk([`${site.origin}/doc`])).rejects.toThrow(
      /POST \/scrape\/bulk is malformed: data\.0\.success/,
    );
    expect(front.attempts()).toBe(2);
    // The crawl's answers too: its start is well formed, its status is not.
    const { id } = await client.startCrawl({ url: `${site.origin}/doc`, limit: 1 });
    await expect(client.crawlStatus(id)).rejects.toThrow(/GET \/crawl\/[-0-9a-f]+ is malformed: creditsUsed: /);
    expect(front.attempts()).toBe(4);
    await client.close();
  });

  it("reads a bulk entry's error code it does not know (a newer scraper's) and keeps the other pages", async () => {
    const front = await flakyFront(0, 503, (answer) => {
      for (const entry of answer.data as { success: boolean; code?: string }[])
        if (!entry.success) entry.code = "A_CODE_FROM_A_NEWER_SCRAPER";
    });
    const client = new ScraperClient({ url: front.url, api_key: KEY }, { backoffBaseMs: 20 });
    const [ok, failed] = await client.scrapeBulk([`${site.origin}/doc`, "http://127.0.0.1:9/not-allowed"]);
    expect(ok).toMatchObject({ success: true, data: { metadata: { title: "Doc" } } });
    expect(failed).toMatchObject({ success: false, code: "A_CODE_FROM_A_NEWER_SCRAPER" });
    expect(front.attempts()).toBe(1);
    await client.close();
  });

  it("does nothing when disabled", async () => {
    const client = new ScraperClient({ enabled: false, url: "http://127.0.0.1:9" });
    await expect(client.scrape(`${site.origin}/doc`)).rejects.toBeInstanceOf(ScraperDisabledError);
    await client.close();
  });
});
