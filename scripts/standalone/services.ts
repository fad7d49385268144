// The platform's services as the launcher starts them under its Supervisor: search, the gateway,
// the scraper (when the scraping section wants the launcher's own) and the console (unless
// CAPSTAN_CONSOLE=off). Each listens where settings.ts says; readiness is asked where its health
// answers.
import { CONSOLE_ENTRY, consoleAdminToken, consoleEnv, ensureConsoleBuilt } from "./console.ts";
import type { ScrapingPlan } from "./platform-config.ts";
import { type Service, type Supervisor, waitReady } from "./processes.ts";
import {
  cfg,
  consoleInternalUrl,
  gatewayInternalUrl,
  gatewayUrl,
  root,
  scraperUrl,
  searchInternalUrl,
  searchUrl,
} from "./settings.ts";

export interface Services {
  search: Service;
  gateway: Service;
  /** The launcher's own scraper, when it starts one. */
  scraper: Service | undefined;
  /** The console's admin token, when the console runs. */
  admin: { file: string; token: string } | undefined;
  /** The console, once its page is built. */
  console: Promise<Service> | undefined;
}

/** Which services became ready (a service not started is not). */
export interface Ready {
  search: boolean;
  gateway: boolean;
  scraper: boolean;
  console: boolean;
}

type Env = Record<string, string | undefined>;

/** The environment search and the gateway share: the resources, the internal token, the egress policy. */
export function commonEnv(resourcesDir: string, token: string): Env {
  return {
    CAPSTAN_RESOURCES_DIR: resourcesDir,
    CAPSTAN_INTERNAL_TOKEN: token,
    HOST: cfg.host,
    OTEL_SDK_DISABLED: process.env.OTEL_SDK_DISABLED ?? "false",
    // On one machine a provider on loopback (Ollama, vLLM, a fake in a test) is the usual case:
    // the egress policy allows this host's own addresses here, and nothing else non-public.
    CAPSTAN_EGRESS_ALLOWED_HOSTS: process.env.CAPSTAN_EGRESS_ALLOWED_HOSTS ?? "localhost,127.0.0.0/8,::1",
  };
}

/** Starts every service; `namespace` is the one the console shows first. */
export function startServices(
  supervisor: Supervisor,
  say: (line: string) => void,
  o: { common: Env; redis: string | undefined; scraping: ScrapingPlan; namespace: string },
): Services {
  const search = startSearch(supervisor, o.common);
  const gateway = startGateway(supervisor, o.common, o.redis);
  const scraper = o.scraping.startLocal ? startScraper(supervisor, o.scraping.localEnv) : undefined;
  const admin = cfg.console ? consoleAdminToken(cfg.stateDir) : undefined;
  const consoleService = admin
    ? startConsole(supervisor, say, { tokenFile: admin.file, namespace: o.namespace, scraper: scraper !== undefined })
    : undefined;
  return { search, gateway, scraper, admin, console: consoleService };
}

/** Waits for every service started; generous, as on a busy machine loading the model and Chromium takes minutes. */
export async function waitAllReady(s: Services): Promise<Ready> {
  const timeoutMs = 300_000;
  const [search, gateway, scraper, consoleReady] = await Promise.all([
    waitReady(s.search, timeoutMs),
    waitReady(s.gateway, timeoutMs),
    s.scraper ? waitReady(s.scraper, timeoutMs) : Promise.resolve(false),
    s.console ? s.console.then((c) => waitReady(c, timeoutMs)) : Promise.resolve(false),
  ]);
  return { search, gateway, scraper, console: consoleReady };
}

function startSearch(supervisor: Supervisor, common: Env): Service {
  return startDataPlane(supervisor, "search", searchInternalUrl, {
    ...common,
    PORT: String(cfg.searchPort),
    CAPSTAN_INTERNAL_PORT: String(cfg.searchInternalPort),
    CAPSTAN_DATA_DIR: `${cfg.stateDir}/vectors`,
  });
}

/** The gateway, limiting with the Redis at `redis`, or in process when there is none. */
function startGateway(supervisor: Supervisor, common: Env, redis: string | undefined): Service {
  return startDataPlane(supervisor, "gateway", gatewayInternalUrl, {
    ...common,
    PORT: String(cfg.gatewayPort),
    CAPSTAN_INTERNAL_PORT: String(cfg.gatewayInternalPort),
    // Retrieval with the internal token: search's internal port, the only one that accepts it.
    CAPSTAN_SEARCH_URL: searchInternalUrl,
    CAPSTAN_SECRETS_DIR: `${cfg.stateDir}/secrets`,
    // Not inherited when no Redis answered: the gateway then limits in process.
    REDIS_URL: redis,
  });
}

/** Search or the gateway (services/<name>/src/main.ts); readiness is asked on its internal port, where its health answers. */
function startDataPlane(supervisor: Supervisor, name: "search" | "gateway", internalUrl: string, env: Env): Service {
  return supervisor.start({
    name,
    entry: `${root}/services/${name}/src/main.ts`,
    url: internalUrl,
    readyPath: "/readyz",
    env,
  });
}

/** The launcher's scraper; `localEnv` holds the scraping section's api_key, which it requires. */
function startScraper(supervisor: Supervisor, localEnv: Env): Service {
  return supervisor.start({
    name: "scraper",
    entry: `${root}/services/scraper/src/main.ts`,
    url: scraperUrl,
    readyPath: "/health",
    env: {
      HOST: cfg.host,
      PORT: String(cfg.scraperPort),
      INTERNAL_PORT: String(cfg.scraperPort),
      ADMIN_PORT: String(cfg.scraperAdminPort),
      RENDER_PORT: String(cfg.renderPort),
      LOGGING_LEVEL: process.env.LOGGING_LEVEL ?? "info",
      ...localEnv,
    },
  });
}

/** The console, once its page is built (or known not to build: it then answers 503 until it is). */
async function startConsole(
  supervisor: Supervisor,
  say: (line: string) => void,
  o: { tokenFile: string; namespace: string; scraper: boolean },
): Promise<Service> {
  const unbuilt = await ensureConsoleBuilt();
  if (unbuilt) say(`the console's page could not be built (${unbuilt}); it answers 503 until it is`);
  return supervisor.start({
    name: "console",
    entry: CONSOLE_ENTRY,
    // Readiness is asked on the console's internal port, where its health answers.
    url: consoleInternalUrl,
    readyPath: "/readyz",
    env: consoleEnv({
      host: cfg.host,
      port: cfg.consolePort,
      internalPort: cfg.consoleInternalPort,
      resourcesDir: cfg.resourcesDir,
      stateDir: cfg.stateDir,
      tokenFile: o.tokenFile,
      namespace: o.namespace,
      gatewayUrl,
      gatewayInternalUrl,
      searchUrl,
      scraperUrl: o.scraper ? scraperUrl : undefined,
    }),
  });
}
