// Standalone mode's console: the same console process as in a cluster, started with the YAML
// folder as its API (console/src/local-api.ts) and a local admin token instead of Kubernetes
// sign-in. The token is generated once into <state>/console-admin-token (mode 0600) and printed at
// each start; delete the file to have a new one made. The page is built (Vite) when console/dist
// is missing, as on a fresh clone.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
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

/** Builds the page into console/dist unless it is there; returns why it could not, or undefined. */
export async function ensureConsoleBuilt(): Promise<string | undefined> {
  if (existsSync(`${root}/console/dist/index.html`)) return undefined;
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
  searchUrl: string;
  /** The launcher's scraper, when it runs one: "try a scrape" uses it for every Scraper. */
  scraperUrl: string | undefined;
}): Record<string, string | undefined> {
  return {
    HOST: o.host,
    PORT: String(o.port),
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
