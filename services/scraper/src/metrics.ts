// The scraper's metrics. The rendering service and the API may share a process (standalone)
// or not (two containers), so each builds its own set on its own registry.
import { Counter, Gauge, Histogram, LATENCY_BUCKETS, outboundMetrics, type Registry } from "@capstan/shared";

export function renderMetrics(registry: Registry) {
  return {
    duration: new Histogram({
      name: "capstan_scraper_render_duration_seconds",
      help: "Page renders by outcome (ok or an error code)",
      labelNames: ["outcome"] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    pagesInUse: new Gauge({
      name: "capstan_scraper_renders_in_flight",
      help: "Browser pages rendering right now",
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: "capstan_scraper_render_queue_depth",
      help: "Renders waiting for a page",
      registers: [registry],
    }),
    browserRestarts: new Counter({
      name: "capstan_scraper_browser_restarts_total",
      help: "Chromium processes replaced after a crash or disconnect",
      registers: [registry],
    }),
    browserRequests: new Counter({
      name: "capstan_scraper_browser_requests_total",
      help: "Requests made by rendered pages, by outcome (fulfilled, blocked_ssrf, blocked_media, failed)",
      labelNames: ["outcome"] as const,
      registers: [registry],
    }),
    escapedRequests: new Counter({
      name: "capstan_scraper_browser_escaped_requests_total",
      help: "Browser connections outside request interception (Chromium's own background traffic), dropped",
      registers: [registry],
    }),
    ssrfBlocked: new Counter({
      name: "capstan_scraper_ssrf_blocked_total",
      help: "Targets refused by the SSRF guard before any connection, by stage",
      labelNames: ["stage"] as const,
      registers: [registry],
    }),
  };
}
export type RenderMetrics = ReturnType<typeof renderMetrics>;

export function apiMetrics(registry: Registry) {
  return {
    duration: new Histogram({
      name: "capstan_scraper_scrape_duration_seconds",
      help: "Scrapes (one URL each, bulk included) by outcome (ok or an error code)",
      labelNames: ["outcome"] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    inFlight: new Gauge({
      name: "capstan_scraper_scrapes_in_flight",
      help: "Scrapes being processed",
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: "capstan_scraper_queue_depth",
      help: "Scrapes waiting for a worker",
      registers: [registry],
    }),
    ssrfBlocked: new Counter({
      name: "capstan_scraper_api_ssrf_blocked_total",
      help: "Scrape targets refused by the API's SSRF pre-check",
      registers: [registry],
    }),
    jobsRunning: new Gauge({
      name: "capstan_scraper_jobs_running",
      help: "Crawls and batch scrapes running, by kind (crawl, batch)",
      labelNames: ["kind"] as const,
      registers: [registry],
    }),
    jobPages: new Counter({
      name: "capstan_scraper_job_pages_total",
      help: "Pages of crawls and batch scrapes by kind and outcome (ok, error, robots_blocked)",
      labelNames: ["kind", "outcome"] as const,
      registers: [registry],
    }),
    jobStoreErrors: new Counter({
      name: "capstan_scraper_job_store_errors_total",
      help: "Calls to the shared jobs' Redis that failed (timed out, refused), by operation; answered 503 JOBS_UNAVAILABLE",
      labelNames: ["operation"] as const,
      registers: [registry],
    }),
    outbound: outboundMetrics(registry, "capstan_scraper"),
  };
}
export type ApiMetrics = ReturnType<typeof apiMetrics>;
