// Crawl jobs shared through a real Redis Cluster (three masters, one replica each, a password), as
// the operator configures a platform Scraper when the data plane's Redis is one (REDIS_MODE=cluster,
// REDIS_CLUSTER_NODES, REDIS_PASSWORD): two scrapers share a crawl started on one and read on the
// other, and every key of the jobs (BullMQ's and the scraper's own scripts') sits in the one hash
// slot of the Scraper's prefix, or the cluster would have refused the scripts (CROSSSLOT).
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, type RedisClusterGround, startRedisCluster } from "../ground/redis-topologies.ts";
import { type Json, post, type Scraper, type Site, startScraper, startSite } from "./helpers.ts";

const PASSWORD = `pw-${randomUUID()}`;
const PREFIX = `{scraper-cluster-${randomUUID()}}`;
const PAGES = ["/", "/a", "/b", "/c", "/d", "/e"];

let cluster: RedisClusterGround;
let site: Site;
const scrapers: Scraper[] = [];

beforeAll(async () => {
  [cluster, site] = await Promise.all([startRedisCluster({ password: PASSWORD }), startSite()]);
  for (const path of PAGES) {
    const links = path === "/" ? PAGES.slice(1) : ["/"];
    site.route(path, (_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(`<html><head><title>${path}</title></head><body><main><h1>Page ${path}</h1>
        ${links.map((l) => `<a href="${l}">${l}</a>`).join(" ")}</main></body></html>`);
    });
  }
  const overrides = {
    allowedHosts: [`127.0.0.1:${site.port}`],
    redis: { mode: "cluster", nodes: cluster.nodes, password: PASSWORD },
    jobs: { redisPrefix: PREFIX },
  };
  scrapers.push(await startScraper(overrides), await startScraper(overrides));
}, 120_000);

afterAll(async () => {
  await Promise.all(scrapers.map((s) => s.close()));
  await site?.close();
  await cluster?.stop();
});

describe("crawl jobs on a Redis Cluster", () => {
  it("are shared by two scrapers, with every key in the prefix's hash slot", async () => {
    const [a, b] = scrapers as [Scraper, Scraper];
    const started = await post(a.url, "/crawl", { url: `${site.origin}/`, limit: 50 });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const id = started.body.id as string;
    let status: Json;
    const deadline = Date.now() + 60_000;
    do {
      await new Promise((r) => setTimeout(r, 200));
      status = await (await fetch(`${b.url}/crawl/${id}`)).json();
    } while (status.status === "scraping" && Date.now() < deadline);
    expect(status.status, JSON.stringify(status)).toBe("completed");
    const urls = (status.data as Json[]).map((p) => new URL(p.metadata.sourceURL).pathname);
    expect([...urls].sort()).toEqual([...PAGES].sort());

    // The keys, read from every master: all of them carry the prefix, so all share its slot.
    const slot = await cli(cluster.all[0]?.port ?? 0, PASSWORD, "CLUSTER", "KEYSLOT", PREFIX);
    const keys: string[] = [];
    for (const node of cluster.all) {
      if (!(await cli(node.port, PASSWORD, "ROLE")).startsWith("master")) continue;
      keys.push(...(await cli(node.port, PASSWORD, "--scan", "--pattern", `${PREFIX}*`)).split("\n").filter(Boolean));
    }
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys)
      expect(await cli(cluster.all[0]?.port ?? 0, PASSWORD, "CLUSTER", "KEYSLOT", key)).toBe(slot);
  });
});
