// Where standalone mode reads its resources, keeps its state and runs each service: from the
// environment (CAPSTAN_RESOURCES_DIR, GATEWAY_PORT, ...), with a default for each, all on loopback.
import { resolve } from "node:path";
import { DEFAULT_WARN_DAYS } from "./expiry.ts";

/** The repository's root (the services' entry points are found from it). */
export const root = resolve(import.meta.dirname, "../..");
const env = process.env;

export const cfg = {
  resourcesDir: resolve(env.CAPSTAN_RESOURCES_DIR ?? `${root}/examples`),
  stateDir: resolve(env.CAPSTAN_STATE_DIR ?? `${root}/.state`),
  host: "127.0.0.1",
  gatewayPort: Number(env.GATEWAY_PORT ?? 8080),
  /** The gateway's metrics and health (its internal port). */
  gatewayInternalPort: Number(env.GATEWAY_INTERNAL_PORT ?? 8090),
  searchPort: Number(env.SEARCH_PORT ?? 8081),
  /** Search's documents API, metrics and health (its internal port). */
  searchInternalPort: Number(env.SEARCH_INTERNAL_PORT ?? 8091),
  scraperPort: Number(env.SCRAPER_PORT ?? 3002),
  /** The scraper's metrics and health (its admin port). */
  scraperAdminPort: Number(env.SCRAPER_ADMIN_PORT ?? 3003),
  renderPort: Number(env.RENDER_PORT ?? 3000),
  consolePort: Number(env.CONSOLE_PORT ?? 8097),
  /** The console's metrics and health (its internal port). */
  consoleInternalPort: Number(env.CONSOLE_INTERNAL_PORT ?? 8098),
  console: env.CAPSTAN_CONSOLE !== "off",
  redisUrl: env.REDIS_URL ?? "redis://127.0.0.1:6379",
  scraper: env.CAPSTAN_SCRAPER !== "off",
  warnDays: Number(env.CAPSTAN_KEY_WARN_DAYS ?? DEFAULT_WARN_DAYS),
  /** Restart backoff of a service that exited (tests shorten it). */
  restartBackoffMs: Number(env.CAPSTAN_RESTART_BACKOFF_MS ?? 1000),
  /** Start, ingest, print, and exit 0. */
  once: env.CAPSTAN_STANDALONE_ONCE === "1",
};

export const gatewayUrl = `http://${cfg.host}:${cfg.gatewayPort}`;
export const gatewayInternalUrl = `http://${cfg.host}:${cfg.gatewayInternalPort}`;
export const searchUrl = `http://${cfg.host}:${cfg.searchPort}`;
export const searchInternalUrl = `http://${cfg.host}:${cfg.searchInternalPort}`;
export const scraperUrl = `http://${cfg.host}:${cfg.scraperPort}`;
export const scraperAdminUrl = `http://${cfg.host}:${cfg.scraperAdminPort}`;
export const consoleUrl = `http://${cfg.host}:${cfg.consolePort}`;
export const consoleInternalUrl = `http://${cfg.host}:${cfg.consoleInternalPort}`;
