// `npm start`: the whole platform on this machine with no cluster (DESIGN.md section 4).
// Resources come from a folder of YAML (default examples/), keys are issued into .state/ and
// printed, the search service uses its embedded vector store and local embedding model, agents
// without a provider answer extractively, and the gateway uses a local Redis when one answers
// (an in-process limiter otherwise, said at start). Ctrl-C stops everything.
import { Socket } from "node:net";
import { resolve } from "node:path";
import { ScraperClient } from "@capstan/shared/clients/scraper-client";
import { SearchClient } from "@capstan/shared/clients/search-client";
import { readResources } from "@capstan/shared/resource-view";
import { ingestKnowledgeBase } from "./ingest.ts";
import { type Service, startService, stopAll, waitReady } from "./processes.ts";
import { internalToken, materialize } from "./state.ts";

const root = resolve(import.meta.dirname, "../..");
const env = process.env;
const cfg = {
  resourcesDir: resolve(env.CAPSTAN_RESOURCES_DIR ?? `${root}/examples`),
  stateDir: resolve(env.CAPSTAN_STATE_DIR ?? `${root}/.state`),
  host: "127.0.0.1",
  gatewayPort: Number(env.GATEWAY_PORT ?? 8080),
  searchPort: Number(env.SEARCH_PORT ?? 8081),
  scraperPort: Number(env.SCRAPER_PORT ?? 3002),
  renderPort: Number(env.RENDER_PORT ?? 3000),
  redisUrl: env.REDIS_URL ?? "redis://127.0.0.1:6379",
  scraper: env.CAPSTAN_SCRAPER !== "off",
  /** Start, ingest, print, and exit 0 (used by the standalone test). */
  once: env.CAPSTAN_STANDALONE_ONCE === "1",
};

const say = (line = "") => process.stdout.write(`${line}\n`);

function redisAnswers(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((done) => {
    const socket = new Socket();
    socket.setTimeout(1000);
    socket.once("data", (d) => {
      socket.destroy();
      done(d.toString().startsWith("+PONG") || d.toString().startsWith("-NOAUTH"));
    });
    socket.once("error", () => done(false));
    socket.once("timeout", () => {
      socket.destroy();
      done(false);
    });
    socket.connect(Number(port || 6379), hostname, () => socket.write("PING\r\n"));
  });
}

async function main(): Promise<void> {
  const resources = readResources([cfg.resourcesDir]);
  const gatewayUrl = `http://${cfg.host}:${cfg.gatewayPort}`;
  const searchUrl = `http://${cfg.host}:${cfg.searchPort}`;
  const scraperUrl = `http://${cfg.host}:${cfg.scraperPort}`;
  const { resourcesDir, keys } = materialize(resources, cfg.stateDir, {
    gateway: `${gatewayUrl}/api/v1`,
    search: `${searchUrl}/v1/rag/search`,
  });
  const token = internalToken(cfg.stateDir);
  const redis = (await redisAnswers(cfg.redisUrl)) ? cfg.redisUrl : undefined;

  say(`Capstan standalone: ${resources.length} resources from ${cfg.resourcesDir}; state in ${cfg.stateDir}`);
  say(
    redis
      ? `Rate limits: Redis at ${redis}`
      : `Rate limits: no Redis answered at ${cfg.redisUrl}; the gateway limits QPM in process (one replica, exact).`,
  );

  const common = {
    CAPSTAN_RESOURCES_DIR: resourcesDir,
    CAPSTAN_INTERNAL_TOKEN: token,
    HOST: cfg.host,
    OTEL_SDK_DISABLED: env.OTEL_SDK_DISABLED ?? "false",
  };
  const services: Service[] = [];
  const stop = async (code: number) => {
    await stopAll(services);
    process.exit(code);
  };
  process.on("SIGINT", () => void stop(0));
  process.on("SIGTERM", () => void stop(0));

  const search = startService("search", `${root}/services/search/src/main.ts`, searchUrl, {
    ...common,
    PORT: String(cfg.searchPort),
    CAPSTAN_DATA_DIR: `${cfg.stateDir}/vectors`,
  });
  const gateway = startService("gateway", `${root}/services/gateway/src/main.ts`, gatewayUrl, {
    ...common,
    PORT: String(cfg.gatewayPort),
    CAPSTAN_SEARCH_URL: searchUrl,
    CAPSTAN_SECRETS_DIR: `${cfg.stateDir}/secrets`,
    ...(redis ? { REDIS_URL: redis } : {}),
  });
  services.push(search, gateway);
  let scraper: Service | undefined;
  if (cfg.scraper) {
    scraper = startService("scraper", `${root}/services/scraper/src/main.ts`, scraperUrl, {
      HOST: cfg.host,
      PORT: String(cfg.scraperPort),
      INTERNAL_PORT: String(cfg.scraperPort),
      RENDER_PORT: String(cfg.renderPort),
      LOGGING_LEVEL: env.LOGGING_LEVEL ?? "info",
    });
    services.push(scraper);
  }

  const ready = await Promise.all([
    waitReady(search, "/readyz", 180_000),
    waitReady(gateway, "/readyz", 60_000),
    scraper ? waitReady(scraper, "/health", 60_000) : Promise.resolve(true),
  ]);
  if (!ready[0] || !ready[1]) {
    say("search or gateway did not become ready; see their output above");
    return stop(1);
  }
  if (!ready[2])
    say("the scraper did not start (is Chromium installed? bash scripts/setup.sh); URL sources are skipped");

  const searchClient = new SearchClient({ baseURL: searchUrl, token });
  const scraperClient =
    scraper && ready[2] ? new ScraperClient({ url: scraperUrl, timeout: 30, max_retries: 1 }) : undefined;
  for (const kb of resources.filter((r) => r.kind === "KnowledgeBase")) {
    const s = await ingestKnowledgeBase(kb, { search: searchClient, scraper: scraperClient });
    say(`Knowledge base ${s.knowledgeId}: ${s.documents} documents, ${s.chunks} chunks ingested`);
    for (const f of s.failures) say(`  skipped ${f}`);
  }

  say();
  say("Keys (kept in .state/keys.json; shown here once per start):");
  for (const k of keys) say(`  ${k.kind.padEnd(13)} ${k.namespace}/${k.name} (${k.label}): ${k.key}`);
  const chatKey = keys.find((k) => k.kind === "AccessChannel")?.key;
  const searchKey = keys.find((k) => k.kind === "SearchKey")?.key;
  say();
  say(`Chat (OpenAI-compatible):  ${gatewayUrl}/api/v1/chat/completions`);
  if (chatKey) {
    say(
      `  curl -s ${gatewayUrl}/api/v1/chat/completions -H 'Authorization: Bearer ${chatKey}' -H 'Content-Type: application/json' \\\n` +
        `    -d '{"model":"any","messages":[{"role":"user","content":"What happens when I exceed the rate limit?"}]}'`,
    );
  }
  say(`Search:                    ${searchUrl}/v1/rag/search`);
  if (searchKey) {
    say(
      `  curl -s ${searchUrl}/v1/rag/search -H 'Authorization: Bearer ${searchKey}' -H 'Content-Type: application/json' \\\n` +
        `    -d '{"knowledgeIds":["kb_product_docs"],"text":"how long are keys valid","minSimilarity":0.3}'`,
    );
  }
  if (scraper && ready[2])
    say(`Scraper:                   ${scraperUrl}/scrape   (rendering service ${cfg.renderPort})`);
  say(
    `Metrics:                   ${gatewayUrl}/metrics  ${searchUrl}/metrics${scraper ? `  ${scraperUrl}/metrics` : ""}`,
  );
  say();
  if (cfg.once) return stop(0);
  say("Running. Ctrl-C stops every service.");
}

main().catch((err: unknown) => {
  process.stderr.write(`capstan standalone: ${(err as Error).message}\n`);
  process.exit(1);
});
