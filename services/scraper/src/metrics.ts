// The scraper's metrics. The rendering service and the API may share a process (standalone)
// or not (two containers), so each builds its own set on its own registry.
import { LATENCY_BUCKETS, metricFamilies, outboundMetrics, type Registry } from "@capstan/shared";

export function renderMetrics(registry: Registry) {
  const m = metricFamilies(registry);
  return {
    duration: m.histogram(
      "capstan_scraper_render_duration_seconds",
      "Page renders by outcome (ok or an error code)",
      ["outcome"],
      LATENCY_BUCKETS,
    ),
    pagesInUse: m.gauge("capstan_scraper_renders_in_flight", "Browser pages rendering right now"),
    queueDepth: m.gauge("capstan_scraper_render_queue_depth", "Renders waiting for a page"),
    browserRestarts: m.counter(
      "capstan_scraper_browser_restarts_total",
      "Chromium processes replaced after a crash or disconnect",
    ),
    browserRequests: m.counter(
      "capstan_scraper_browser_requests_total",
      "Requests made by rendered pages, by outcome (fulfilled, blocked_ssrf, blocked_media, failed)",
      ["outcome"],
    ),
    escapedRequests: m.counter(
      "capstan_scraper_browser_escaped_requests_total",
      "Browser connections outside request interception (Chromium's own background traffic), dropped",
    ),
    ssrfBlocked: m.counter(
      "capstan_scraper_ssrf_blocked_total",
      "Targets refused by the SSRF guard before any connection, by stage",
      ["stage"],
    ),
  };
}
export type RenderMetrics = ReturnType<typeof renderMetrics>;

export function apiMetrics(registry: Registry) {
  const m = metricFamilies(registry);
  return {
    duration: m.histogram(
      "capstan_scraper_scrape_duration_seconds",
      "Scrapes (one URL each, bulk included) by outcome (ok or an error code)",
      ["outcome"],
      LATENCY_BUCKETS,
    ),
    inFlight: m.gauge("capstan_scraper_scrapes_in_flight", "Scrapes being processed"),
    queueDepth: m.gauge("capstan_scraper_queue_depth", "Scrapes waiting for a worker"),
    ssrfBlocked: m.counter(
      "capstan_scraper_api_ssrf_blocked_total",
      "Scrape targets refused by the API's SSRF pre-check",
    ),
    jobsRunning: m.gauge("capstan_scraper_jobs_running", "Crawls and batch scrapes running, by kind (crawl, batch)", [
      "kind",
    ]),
    jobPages: m.counter(
      "capstan_scraper_job_pages_total",
      "Pages of crawls and batch scrapes by kind and outcome (ok, error, robots_blocked)",
      ["kind", "outcome"],
    ),
    jobStoreErrors: m.counter(
      "capstan_scraper_job_store_errors_total",
      "Calls to the shared jobs' Redis that failed (timed out, refused), by operation; answered 503 JOBS_UNAVAILABLE",
      ["operation"],
    ),
    outbound: outboundMetrics(registry, "capstan_scraper"),
  };
}
export type ApiMetrics = ReturnType<typeof apiMetrics>;
