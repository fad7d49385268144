// Standalone mode's console: the same console process as in a cluster, started with the YAML
// folder as its API (console/src/local-api.ts) and a local admin token instead of Kubernetes
// sign-in. The token is generated once into <state>/console-admin-token (mode 0600) and printed at
// each start; delete the file to have a new one made. The page is built (Vite) when console/dist
// is missing, as on a fresh clone, or older than any of its sources (as `make` decides: after a
// `git pull` changed the page, the next start serves the new one, not the last build).
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";

const root = resolve(import.meta.dirname, "../..");
export const CONSOLE_ENTRY = `${root}/console/src/main.ts`;

/** The admin token's file, made on first use. */
export function consoleAdminToken(stateDir: string): { file: string; token: string } {
  const file = join(stateDir, "console-admin-token");
  if (existsSync(file)) {
    const token = readFileSync(file, "utf8").trim();
    if (token) return { file, token };
  }
  mkdirSync(stateDir, { recursive: true });
  const token = `cap_adm_${randomBytes(32).toString("base64url")}`;
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { file, token };
}

/** What the page is built from: its own files, the console's and shared code it imports, the lock. */
const PAGE_SOURCES = ["console/web", "console/src", "services/shared/src", "package-lock.json"];

/** The newest modification time (ms) of a file under any of the paths (relative to base). */
function newestSource(paths: string[], base: string): number {
  let newest = 0;
  for (const p of paths) {
    const full = join(base, p);
    if (!existsSync(full)) continue;
    if (statSync(full).isFile()) newest = Math.max(newest, statSync(full).mtimeMs);
    else {
      for (const f of readdirSync(full, { recursive: true, withFileTypes: true })) {
        if (f.isFile()) newest = Math.max(newest, statSync(join(f.parentPath, f.name)).mtimeMs);
      }
    }
  }
  return newest;
}

/** Whether console/dist is missing or older than one of the page's sources. */
export function consoleBuildStale(base = root): boolean {
  const built = join(base, "console/dist/index.html");
  return !existsSync(built) || statSync(built).mtimeMs < newestSource(PAGE_SOURCES, base);
}

/** Builds the page into console/dist when consoleBuildStale; returns why it could not, or undefined. */
export async function ensureConsoleBuilt(): Promise<string | undefined> {
  if (!consoleBuildStale()) return undefined;
  try {
    await promisify(execFile)(process.execPath, [`${root}/console/src/build.ts`], { timeout: 300_000 });
    return undefined;
  } catch (err) {
    return (err as Error).message.split("\n")[0];
  }
}

/** The console's environment in standalone mode. */
export function consoleEnv(o: {
  host: string;
  port: number;
  resourcesDir: string;
  stateDir: string;
  tokenFile: string;
  namespace: string;
  gatewayUrl: string;
  gatewayInternalUrl: string;
  internalPort: number;
  searchUrl: string;
  /** The launcher's scraper, when it runs one: "try a scrape" uses it for every Scraper. */
  scraperUrl: string | undefined;
}): Record<string, string | undefined> {
  return {
    HOST: o.host,
    PORT: String(o.port),
    CAPSTAN_INTERNAL_PORT: String(o.internalPort),
    CAPSTAN_CONSOLE_STANDALONE_RESOURCES_DIR: o.resourcesDir,
    CAPSTAN_CONSOLE_STANDALONE_STATE_DIR: o.stateDir,
    CAPSTAN_CONSOLE_ADMIN_TOKEN_FILE: o.tokenFile,
    CAPSTAN_CONSOLE_DEFAULT_NAMESPACE: o.namespace,
    CAPSTAN_GATEWAY_URL: o.gatewayUrl,
    CAPSTAN_SEARCH_URL: o.searchUrl,
    CAPSTAN_GATEWAY_METRICS_URLS: `${o.gatewayInternalUrl}/metrics`,
    CAPSTAN_SCRAPER_URL: o.scraperUrl,
  };
}
