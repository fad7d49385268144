// `npm start`: the whole platform on this machine with no cluster (DESIGN.md section 4).
// Resources come from a folder of YAML (default examples/), keys are issued into .state/ and
// printed, the search service uses its embedded vector store and local embedding model, agents
// without a provider answer extractively, and the gateway uses a local Redis when one answers
// (an in-process limiter otherwise, said at start). While it runs, the folder is watched and
// changes are applied; keys that expired or expire soon are called out; a service that exits is
// reported and started again. The administration console (console/) runs on the same folder and
// signs in with a local admin token printed at start (console.ts). One Ctrl-C stops everything,
// one line per service.
import { Socket } from "node:net";
import { resolve } from "node:path";
import { docsIdFor } from "@capstan/operator/translate";
import { loadConfig, loadConfigOrExit } from "@capstan/shared";
import type { AnyResource, KnowledgeBase } from "@capstan/shared/api";
import { knowledgeIdOf } from "@capstan/shared/api";
import { SearchClient } from "@capstan/shared/clients/search-client";
import { describeRedisTarget, redisEnvMap, redisTarget, redisTopologySchema } from "@capstan/shared/redis";
import { readResources } from "@capstan/shared/resource-view";
import { z } from "zod";
import { CONSOLE_ENTRY, consoleAdminToken, consoleEnv, ensureConsoleBuilt } from "./console.ts";
import { DEFAULT_WARN_DAYS, keyValidity, keyWarning, nextBoundaryMs } from "./expiry.ts";
import { ingestKnowledgeBase } from "./ingest.ts";
import { loadPlatformConfig, scrapingPlan } from "./platform-config.ts";
import { Supervisor, waitReady } from "./processes.ts";
import { type IssuedKey, internalToken, materialize } from "./state.ts";
import { describeDiff, knowledgeChanges, type ResourceDiff, watchResources } from "./watch.ts";

const root = resolve(import.meta.dirname, "../..");
const env = process.env;
const cfg = {
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

const say = (line = "") => process.stdout.write(`${line}\n`);

/** The platform configuration file (CAPSTAN_CONFIG): its `scraping:` section. */
const platform = loadConfigOrExit(() => loadPlatformConfig(env.CAPSTAN_CONFIG), "capstan standalone: ");

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

const gatewayUrl = `http://${cfg.host}:${cfg.gatewayPort}`;
const gatewayInternalUrl = `http://${cfg.host}:${cfg.gatewayInternalPort}`;
const searchUrl = `http://${cfg.host}:${cfg.searchPort}`;
const searchInternalUrl = `http://${cfg.host}:${cfg.searchInternalPort}`;
const scraperUrl = `http://${cfg.host}:${cfg.scraperPort}`;
const scraperAdminUrl = `http://${cfg.host}:${cfg.scraperAdminPort}`;
const consoleUrl = `http://${cfg.host}:${cfg.consolePort}`;
const consoleInternalUrl = `http://${cfg.host}:${cfg.consoleInternalPort}`;
const scraping = scrapingPlan(platform, { url: scraperUrl, off: !cfg.scraper });
const endpoints = { gateway: `${gatewayUrl}/api/v1`, search: `${searchUrl}/v1/rag/search` };
const supervisor = new Supervisor({ say, initialBackoffMs: cfg.restartBackoffMs });

function keyLine(k: IssuedKey): string {
  return `  ${k.kind.padEnd(13)} ${k.namespace}/${k.name} (${k.label}): ${k.key}`;
}

/** Every key's warning, once per state (expiring, expired …) while the launcher runs. */
const announced = new Map<string, string>();
function warnKeys(resources: AnyResource[], now = new Date()): void {
  for (const r of resources) {
    const id = `${r.kind}/${r.metadata.namespace ?? "default"}/${r.metadata.name}`;
    const v = keyValidity(r, now, cfg.warnDays);
    const state = `${v.state} ${v.at?.toISOString()}`;
    if (announced.get(id) === state) continue;
    const w = keyWarning(r, now, cfg.resourcesDir, cfg.warnDays);
    if (w) say(`  ${w}`);
    else if (announced.has(id)) say(`  The key of ${r.kind} ${id.split("/").slice(1).join("/")} is valid again.`);
    if (w) announced.set(id, state);
    else announced.delete(id);
  }
}

let expiryTimer: NodeJS.Timeout | undefined;
function scheduleExpiryCheck(resources: AnyResource[]): void {
  clearTimeout(expiryTimer);
  const ms = nextBoundaryMs(resources, new Date(), cfg.warnDays);
  if (ms === undefined) return;
  // setTimeout holds at most ~24.8 days; look again daily at the latest.
  expiryTimer = setTimeout(
    () => {
      warnKeys(resources);
      scheduleExpiryCheck(resources);
    },
    Math.min(ms + 1000, 86_400_000),
  );
  expiryTimer.unref();
}

async function main(): Promise<void> {
  let resources = readResources([cfg.resourcesDir]);
  const first = materialize(resources, cfg.stateDir, endpoints);
  const token = internalToken(cfg.stateDir);
  // Sentinel or Cluster (REDIS_MODE with its addresses, inherited by the services with the rest
  // of the environment): used as configured, no probe. Standalone: the URL if a Redis answers there.
  const topology = loadConfigOrExit(
    () => loadConfig(z.object({ redis: redisTopologySchema }), { env, envMap: redisEnvMap }).redis,
    "capstan standalone: ",
  );
  const replicated = redisTarget(undefined, topology);
  const redis = replicated ? undefined : (await redisAnswers(cfg.redisUrl)) ? cfg.redisUrl : undefined;

  say(`Capstan standalone: ${resources.length} resources from ${cfg.resourcesDir}; state in ${cfg.stateDir}`);
  say(
    replicated
      ? `Rate limits: Redis ${describeRedisTarget(replicated)}`
      : redis
        ? `Rate limits: Redis at ${redis}`
        : `Rate limits: no Redis answered at ${cfg.redisUrl}; the gateway limits QPM in process (one replica, exact).`,
  );
  say(scraping.summary);

  const common = {
    CAPSTAN_RESOURCES_DIR: first.resourcesDir,
    CAPSTAN_INTERNAL_TOKEN: token,
    HOST: cfg.host,
    OTEL_SDK_DISABLED: env.OTEL_SDK_DISABLED ?? "false",
    // On one machine a provider on loopback (Ollama, vLLM, a fake in a test) is the usual case:
    // the egress policy allows this host's own addresses here, and nothing else non-public.
    CAPSTAN_EGRESS_ALLOWED_HOSTS: env.CAPSTAN_EGRESS_ALLOWED_HOSTS ?? "localhost,127.0.0.0/8,::1",
  };
  let stoppingSince = 0;
  const stop = async (code: number) => {
    stoppingSince = Date.now();
    await supervisor.stopAll();
    process.exit(code);
  };
  const onSignal = () => {
    if (stoppingSince > 0) {
      // One Ctrl-C under `npm start` arrives twice: from the terminal (to the whole foreground
      // process group) and forwarded by npm to its script. Only a later one is a second Ctrl-C.
      if (Date.now() - stoppingSince < 1000) return;
      say("Second signal: killing every service now.");
      supervisor.killAll();
      process.exit(1);
    }
    say("Stopping every service (Ctrl-C again to kill them at once):");
    void stop(0);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  const search = supervisor.start({
    name: "search",
    entry: `${root}/services/search/src/main.ts`,
    // Readiness is asked on search's internal port, where its health answers.
    url: searchInternalUrl,
    readyPath: "/readyz",
    env: {
      ...common,
      PORT: String(cfg.searchPort),
      CAPSTAN_INTERNAL_PORT: String(cfg.searchInternalPort),
      CAPSTAN_DATA_DIR: `${cfg.stateDir}/vectors`,
    },
  });
  const gateway = supervisor.start({
    name: "gateway",
    entry: `${root}/services/gateway/src/main.ts`,
    // Readiness is asked on the gateway's internal port, where its health answers.
    url: gatewayInternalUrl,
    readyPath: "/readyz",
    env: {
      ...common,
      PORT: String(cfg.gatewayPort),
      CAPSTAN_INTERNAL_PORT: String(cfg.gatewayInternalPort),
      // Retrieval with the internal token: search's internal port, the only one that accepts it.
      CAPSTAN_SEARCH_URL: searchInternalUrl,
      CAPSTAN_SECRETS_DIR: `${cfg.stateDir}/secrets`,
      // Not inherited when no Redis answered: the gateway then limits in process, as said above.
      REDIS_URL: redis,
    },
  });
  const scraper = scraping.startLocal
    ? supervisor.start({
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
          LOGGING_LEVEL: env.LOGGING_LEVEL ?? "info",
          // The scraping section's api_key: the scraper requires it and the launcher sends it.
          ...scraping.localEnv,
        },
      })
    : undefined;

  const admin = cfg.console ? consoleAdminToken(cfg.stateDir) : undefined;
  const consoleBuild = admin ? ensureConsoleBuilt() : Promise.resolve(undefined);
  const startConsole = async () => {
    const unbuilt = await consoleBuild;
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
        tokenFile: (admin as { file: string }).file,
        namespace: resources[0]?.metadata.namespace ?? "default",
        gatewayUrl,
        gatewayInternalUrl,
        searchUrl,
        scraperUrl: scraper ? scraperUrl : undefined,
      }),
    });
  };
  const consoleService = admin ? startConsole() : undefined;

  const ready = await Promise.all([
    // Generous: on a busy machine loading the model and Chromium takes minutes.
    waitReady(search, 300_000),
    waitReady(gateway, 300_000),
    scraper ? waitReady(scraper, 300_000) : Promise.resolve(false),
    consoleService ? consoleService.then((c) => waitReady(c, 300_000)) : Promise.resolve(false),
  ]);
  if (!ready[0] || !ready[1]) {
    say("search or gateway did not become ready; see their output above");
    return stop(1);
  }
  if (scraper && !ready[2])
    say("the scraper did not start (is Chromium installed? bash scripts/setup.sh); URL sources are skipped");

  const searchClient = new SearchClient({ baseURL: searchUrl, internalURL: searchInternalUrl, token });
  // The scraping section's url, timeout, max_retries and api_key (a local scraper that did not
  // start leaves none).
  const scrapingClient = scraping.client && (!scraping.startLocal || ready[2]) ? scraping.client : undefined;
  const ingest = async (kb: KnowledgeBase) => {
    const s = await ingestKnowledgeBase(kb, { search: searchClient, scraping: scrapingClient });
    say(
      `Knowledge base ${s.knowledgeId}: ${s.documents} documents, ${s.chunks} chunks ingested` +
        ` (${s.documents - s.embedded} unchanged, ${s.pruned} removed)`,
    );
    for (const f of s.failures) say(`  skipped ${f}`);
  };
  for (const kb of resources.filter((r) => r.kind === "KnowledgeBase")) await ingest(kb);

  say();
  say("Keys (kept in .state/keys.json; shown here once per start):");
  for (const k of first.keys) say(keyLine(k));
  warnKeys(resources);
  const chatKey = first.keys.find((k) => k.kind === "AccessChannel")?.key;
  const searchKey = first.keys.find((k) => k.kind === "SearchKey")?.key;
  const kbId = resources.find((r) => r.kind === "KnowledgeBase");
  say();
  say(`Chat (OpenAI-compatible):  ${gatewayUrl}/api/v1/chat/completions`);
  if (chatKey) {
    say(
      `  curl -s ${gatewayUrl}/api/v1/chat/completions -H 'Authorization: Bearer ${chatKey}' -H 'Content-Type: application/json' \\\n` +
        `    -d '{"model":"any","messages":[{"role":"user","content":"What happens when I exceed the rate limit?"}]}'`,
    );
  }
  say(`Search:                    ${searchUrl}/v1/rag/search`);
  if (searchKey && kbId) {
    say(
      `  curl -s ${searchUrl}/v1/rag/search -H 'Authorization: Bearer ${searchKey}' -H 'Content-Type: application/json' \\\n` +
        `    -d '{"knowledgeIds":["${knowledgeIdOf(kbId as KnowledgeBase)}"],"text":"how long are keys valid"}'`,
    );
  }
  if (scraper && scrapingClient)
    say(`Scraper:                   ${scraperUrl}/scrape   (rendering service ${cfg.renderPort})`);
  say(
    `Metrics:                   ${gatewayInternalUrl}/metrics  ${searchInternalUrl}/metrics${scraper ? `  ${scraperAdminUrl}/metrics` : ""}`,
  );
  if (admin && ready[3]) {
    say(`Console:                   ${consoleUrl}   (writes into ${cfg.resourcesDir})`);
    say(`  admin token: ${admin.token}   (kept in ${admin.file})`);
  } else if (admin) say(`the console did not become ready at ${consoleUrl}; see its output above`);
  say();
  if (cfg.once) return stop(0);

  const knownKeys = new Set(first.keys.map((k) => k.key));
  const apply = async (next: AnyResource[], diff: ResourceDiff) => {
    say(`Resources changed in ${cfg.resourcesDir}: ${describeDiff(diff)}`);
    const before = resources;
    const { keys } = materialize(next, cfg.stateDir, endpoints); // the services reload this folder
    for (const k of keys.filter((k) => !knownKeys.has(k.key))) {
      say(`  new key ${keyLine(k).trim()}`);
      knownKeys.add(k.key);
    }
    const { ingest: kbs, drop } = knowledgeChanges(diff);
    for (const kb of kbs as KnowledgeBase[]) {
      await ingest(kb);
      const old = before.find((r) => r.kind === "KnowledgeBase" && knowledgeIdOf(r) === knowledgeIdOf(kb));
      const kept = new Set(kb.spec.sources.map((s) => docsIdFor(s.name, s.url ? "url" : "text", s.url ?? "")));
      for (const s of (old as KnowledgeBase | undefined)?.spec.sources ?? []) {
        const id = docsIdFor(s.name, s.url ? "url" : "text", s.url ?? "");
        const ref = { namespace: kb.metadata.namespace || "default", knowledgeId: knowledgeIdOf(kb) };
        if (!kept.has(id)) await searchClient.deleteDocument(ref, id);
      }
    }
    for (const id of drop) {
      // The documents API addresses a knowledge base by namespace and id.
      const gone = before.find((r) => r.kind === "KnowledgeBase" && knowledgeIdOf(r as KnowledgeBase) === id);
      await searchClient.deleteKnowledgeBase({ namespace: gone?.metadata.namespace || "default", knowledgeId: id });
      say(`Knowledge base ${id}: removed`);
    }
    const scrapers = [...diff.added, ...diff.changed].filter((r) => r.kind === "Scraper");
    for (const r of scrapers)
      say(
        `  Scraper ${r.metadata.name}: not applied — standalone mode runs one scraper with the launcher's settings ` +
          "(SCRAPER_PORT, RENDER_PORT, LOGGING_LEVEL); a cluster applies Scraper resources",
      );
    resources = next;
    warnKeys(next);
    scheduleExpiryCheck(next);
    say("Applied: the gateway and search serve the new resources.");
  };
  watchResources(resources, {
    dir: cfg.resourcesDir,
    apply,
    rejected: (err) =>
      say(`Resources in ${cfg.resourcesDir} not applied: ${err.message}. The previous resources keep serving.`),
    failed: (err) => say(`Applying the change failed part-way: ${err.message}. It is tried again on the next change.`),
    recovered: () => say(`Resources in ${cfg.resourcesDir} read fine again; nothing new to apply.`),
  });
  scheduleExpiryCheck(resources);
  say(`Watching ${cfg.resourcesDir}: saved changes are applied.`);
  say("Running. Ctrl-C stops every service.");
}

main().catch((err: unknown) => {
  process.stderr.write(`capstan standalone: ${(err as Error).message}\n`);
  supervisor.killAll();
  process.exit(1);
});
