// Test ground of the scraper tests: a loopback site whose pages the tests define, and a real
// scraper (rendering service with Debian's Chromium + API), both on 127.0.0.1 port 0.

import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type AppDeps, buildApp, buildRenderService, type RenderService, scraperConfig } from "@capstan/scraper";
import { createLogger, createRegistry, listenInternal, type Registry } from "@capstan/shared";
import type { FastifyInstance } from "fastify";
import { inject } from "vitest";

// biome-ignore lint/suspicious/noExplicitAny: tests inspect JSON response bodies loosely
export type Json = any;

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface Site {
  origin: string;
  port: number;
  /** Requests received, by path (with query). */
  hits: string[];
  route(path: string, handler: Handler | string): void;
  close(): Promise<void>;
}

export async function startSite(): Promise<Site> {
  const routes = new Map<string, Handler>();
  const hits: string[] = [];
  const sockets = new Set<import("node:net").Socket>();
  const server: Server = createServer((req, res) => {
    hits.push(req.url ?? "/");
    const handler = routes.get((req.url ?? "/").split("?")[0] as string);
    if (!handler) {
      res.writeHead(404, { "content-type": "text/html" });
      res.end("<html><head><title>Not found</title></head><body><h1>Not found</h1></body></html>");
      return;
    }
    handler(req, res);
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    hits,
    route(path, handler) {
      routes.set(
        path,
        typeof handler === "string"
          ? (_req, res) => {
              res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
              res.end(handler);
            }
          : handler,
      );
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export interface Scraper {
  url: string;
  renderUrl: string;
  app: FastifyInstance;
  render: RenderService;
  /** The admin port: /metrics, /healthz, /readyz (404 on `url`). */
  adminUrl: string;
  registry: Registry;
  renderRegistry: Registry;
  close(): Promise<void>;
}

/** A real scraper: rendering service and API, each listening on a free loopback port. `deps.now`: the jobs' clock. */
export async function startScraper(
  overrides: Record<string, unknown> = {},
  deps: Pick<AppDeps, "now"> = {},
): Promise<Scraper> {
  const logger = createLogger({ name: "scraper-test", level: process.env.TEST_LOG_LEVEL ?? "silent" });
  const base = scraperConfig({ workerConcurrency: 2, maxConcurrentRequests: 10, ...overrides });
  const renderRegistry = createRegistry({ defaultMetrics: false });
  const render = buildRenderService(base, { logger, registry: renderRegistry });
  await render.start({ warm: false });
  await render.app.listen({ port: 0, host: "127.0.0.1" });
  const renderUrl = `http://127.0.0.1:${(render.app.server.address() as AddressInfo).port}`;
  const registry = createRegistry({ defaultMetrics: false });
  const app = buildApp({ ...base, renderUrl }, { logger, registry, ...deps });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const admin = (await listenInternal(app, { port: 0, host: "127.0.0.1" })).address() as AddressInfo;
  return {
    url,
    adminUrl: `http://127.0.0.1:${admin.port}`,
    renderUrl,
    app,
    render,
    registry,
    renderRegistry,
    close: async () => {
      await app.close();
      await render.close();
    },
  };
}

export async function post(
  base: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> & { data?: unknown } }> {
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) };
}

/** A counter's or gauge's value; for a histogram, its observation count. */
export async function metricValue(registry: Registry, name: string, labels: Record<string, string> = {}) {
  const metric = await registry.getSingleMetric(name)?.get();
  const values =
    String(metric?.type) === "histogram"
      ? metric?.values.filter((v) => (v as { metricName?: string }).metricName === `${name}_count`)
      : metric?.values;
  const match = values?.find((v) =>
    Object.entries(labels).every(([k, val]) => (v.labels as Record<string, string>)[k] === val),
  );
  return match?.value ?? 0;
}

/** Scraper settings that put its jobs in memory (none) or in the test ground's Redis, under a prefix of their own. */
export interface JobsConfig {
  redisUrl?: string;
  jobs?: { redisPrefix: string };
}

/** The two places jobs live, for describe.each: the same tests run against both. */
export const JOB_BACKENDS: [string, () => JobsConfig][] = [
  ["in memory", () => ({})],
  [
    "shared through Redis",
    () => ({ redisUrl: inject("redisUrl"), jobs: { redisPrefix: `{scraper-test-${randomUUID()}}` } }),
  ],
];
