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
import { docsIdFor } from "@capstan/operator/translate";
import { loadConfig, loadConfigOrExit } from "@capstan/shared";
import type { AnyResource, KnowledgeBase } from "@capstan/shared/api";
import { knowledgeIdOf } from "@capstan/shared/api";
import { SearchClient } from "@capstan/shared/clients/search-client";
import { describeRedisTarget, redisEnvMap, redisTarget, redisTopologySchema } from "@capstan/shared/redis";
import { readResources } from "@capstan/shared/resource-view";
import { z } from "zod";
import { keyValidity, keyWarning, nextBoundaryMs } from "./expiry.ts";
import { ingestKnowledgeBase } from "./ingest.ts";
import { loadPlatformConfig, type ScrapingPlan, scrapingPlan } from "./platform-config.ts";
import { Supervisor } from "./processes.ts";
import { commonEnv, type Ready, type Services, startServices, waitAllReady } from "./services.ts";
import {
  cfg,
  consoleUrl,
  gatewayInternalUrl,
  gatewayUrl,
  scraperAdminUrl,
  scraperUrl,
  searchInternalUrl,
  searchUrl,
} from "./settings.ts";
import { type IssuedKey, internalToken, materialize } from "./state.ts";
import { describeDiff, knowledgeChanges, type ResourceDiff, watchResources } from "./watch.ts";

const env = process.env;

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

/** The services' Redis for rate limits: as configured, or the local URL if a Redis answers there. */
async function rateLimitRedis(): Promise<{ replicated: ReturnType<typeof redisTarget>; redis: string | undefined }> {
  // Sentinel or Cluster (REDIS_MODE with its addresses, inherited by the services with the rest
  // of the environment): used as configured, no probe. Standalone: the URL if a Redis answers there.
  const topology = loadConfigOrExit(
    () => loadConfig(z.object({ redis: redisTopologySchema }), { env, envMap: redisEnvMap }).redis,
    "capstan standalone: ",
  );
  const replicated = redisTarget(undefined, topology);
  const redis = replicated ? undefined : (await redisAnswers(cfg.redisUrl)) ? cfg.redisUrl : undefined;
  return { replicated, redis };
}

let stoppingSince = 0;
async function stop(code: number): Promise<void> {
  stoppingSince = Date.now();
  await supervisor.stopAll();
  process.exit(code);
}

/** SIGINT or SIGTERM: stop every service; a second one kills them at once. */
function onSignal(): void {
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
}

async function main(): Promise<void> {
  const resources = readResources([cfg.resourcesDir]);
  const first = materialize(resources, cfg.stateDir, endpoints);
  const token = internalToken(cfg.stateDir);
  const { replicated, redis } = await rateLimitRedis();

  say(`Capstan standalone: ${resources.length} resources from ${cfg.resourcesDir}; state in ${cfg.stateDir}`);
  say(
    replicated
      ? `Rate limits: Redis ${describeRedisTarget(replicated)}`
      : redis
        ? `Rate limits: Redis at ${redis}`
        : `Rate limits: no Redis answered at ${cfg.redisUrl}; the gateway limits QPM in process (one replica, exact).`,
  );
  say(scraping.summary);
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  const services = startServices(supervisor, say, {
    common: commonEnv(first.resourcesDir, token),
    redis,
    scraping,
    namespace: resources[0]?.metadata.namespace ?? "default",
  });
  const ready = await waitAllReady(services);
  if (!ready.search || !ready.gateway) {
    say("search or gateway did not become ready; see their output above");
    return stop(1);
  }
  if (services.scraper && !ready.scraper)
    say("the scraper did not start (is Chromium installed? bash scripts/setup.sh); URL sources are skipped");

  const searchClient = new SearchClient({ baseURL: searchUrl, internalURL: searchInternalUrl, token });
  // The scraping section's url, timeout, max_retries and api_key (a local scraper that did not
  // start leaves none).
  const scrapingClient = scraping.client && (!scraping.startLocal || ready.scraper) ? scraping.client : undefined;
  const ingest = (kb: KnowledgeBase) => ingestAndReport(kb, searchClient, scrapingClient);
  for (const kb of resources.filter((r) => r.kind === "KnowledgeBase")) await ingest(kb);

  sayKeys(first.keys, resources);
  sayEndpoints(first.keys, resources, services, ready, scrapingClient !== undefined);
  if (cfg.once) return stop(0);

  watch({ resources, knownKeys: new Set(first.keys.map((k) => k.key)), search: searchClient, ingest });
}

/** Ingests one knowledge base and says what it holds now. */
async function ingestAndReport(
  kb: KnowledgeBase,
  search: SearchClient,
  scrapingClient: ScrapingPlan["client"],
): Promise<void> {
  const s = await ingestKnowledgeBase(kb, { search, scraping: scrapingClient });
  say(
    `Knowledge base ${s.knowledgeId}: ${s.documents} documents, ${s.chunks} chunks ingested` +
      ` (${s.documents - s.embedded} unchanged, ${s.pruned} removed)`,
  );
  for (const f of s.failures) say(`  skipped ${f}`);
}

/** Every key issued, and the warnings of those that expire. */
function sayKeys(keys: IssuedKey[], resources: AnyResource[]): void {
  say();
  say("Keys (kept in .state/keys.json; shown here once per start):");
  for (const k of keys) say(keyLine(k));
  warnKeys(resources);
}

/** Where each service answers, with a ready-to-run request for chat and search. */
function sayEndpoints(
  keys: IssuedKey[],
  resources: AnyResource[],
  services: Services,
  ready: Ready,
  scrapingOn: boolean,
): void {
  const chatKey = keys.find((k) => k.kind === "AccessChannel")?.key;
  const searchKey = keys.find((k) => k.kind === "SearchKey")?.key;
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
  const { scraper, admin } = services;
  if (scraper && scrapingOn)
    say(`Scraper:                   ${scraperUrl}/scrape   (rendering service ${cfg.renderPort})`);
  say(
    `Metrics:                   ${gatewayInternalUrl}/metrics  ${searchInternalUrl}/metrics${scraper ? `  ${scraperAdminUrl}/metrics` : ""}`,
  );
  if (admin && ready.console) {
    say(`Console:                   ${consoleUrl}   (writes into ${cfg.resourcesDir})`);
    say(`  admin token: ${admin.token}   (kept in ${admin.file})`);
  } else if (admin) say(`the console did not become ready at ${consoleUrl}; see its output above`);
  say();
}

/** What the watcher works on: the resources serving now and the keys already shown. */
interface Running {
  resources: AnyResource[];
  knownKeys: Set<string>;
  search: SearchClient;
  ingest: (kb: KnowledgeBase) => Promise<void>;
}

/** Watches the resources folder and applies each saved change. */
function watch(run: Running): void {
  watchResources(run.resources, {
    dir: cfg.resourcesDir,
    apply: (next, diff) => applyChange(run, next, diff),
    rejected: (err) =>
      say(`Resources in ${cfg.resourcesDir} not applied: ${err.message}. The previous resources keep serving.`),
    failed: (err) => say(`Applying the change failed part-way: ${err.message}. It is tried again on the next change.`),
    recovered: () => say(`Resources in ${cfg.resourcesDir} read fine again; nothing new to apply.`),
  });
  scheduleExpiryCheck(run.resources);
  say(`Watching ${cfg.resourcesDir}: saved changes are applied.`);
  say("Running. Ctrl-C stops every service.");
}

/** One change of the folder: new keys, knowledge bases ingested again or removed, then the new resources serve. */
async function applyChange(run: Running, next: AnyResource[], diff: ResourceDiff): Promise<void> {
  say(`Resources changed in ${cfg.resourcesDir}: ${describeDiff(diff)}`);
  const before = run.resources;
  const { keys } = materialize(next, cfg.stateDir, endpoints); // the services reload this folder
  for (const k of keys.filter((k) => !run.knownKeys.has(k.key))) {
    say(`  new key ${keyLine(k).trim()}`);
    run.knownKeys.add(k.key);
  }
  const { ingest: kbs, drop } = knowledgeChanges(diff);
  for (const kb of kbs as KnowledgeBase[]) {
    await run.ingest(kb);
    await deleteRemovedSources(run.search, kb, before);
  }
  for (const id of drop) {
    // The documents API addresses a knowledge base by namespace and id.
    const gone = before.find((r) => r.kind === "KnowledgeBase" && knowledgeIdOf(r as KnowledgeBase) === id);
    await run.search.deleteKnowledgeBase({ namespace: gone?.metadata.namespace || "default", knowledgeId: id });
    say(`Knowledge base ${id}: removed`);
  }
  const scrapers = [...diff.added, ...diff.changed].filter((r) => r.kind === "Scraper");
  for (const r of scrapers)
    say(
      `  Scraper ${r.metadata.name}: not applied — standalone mode runs one scraper with the launcher's settings ` +
        "(SCRAPER_PORT, RENDER_PORT, LOGGING_LEVEL); a cluster applies Scraper resources",
    );
  run.resources = next;
  warnKeys(next);
  scheduleExpiryCheck(next);
  say("Applied: the gateway and search serve the new resources.");
}

/** Deletes the documents of the sources a changed knowledge base no longer lists. */
async function deleteRemovedSources(search: SearchClient, kb: KnowledgeBase, before: AnyResource[]): Promise<void> {
  const old = before.find((r) => r.kind === "KnowledgeBase" && knowledgeIdOf(r) === knowledgeIdOf(kb));
  const kept = new Set(kb.spec.sources.map((s) => docsIdFor(s.name, s.url ? "url" : "text", s.url ?? "")));
  for (const s of (old as KnowledgeBase | undefined)?.spec.sources ?? []) {
    const id = docsIdFor(s.name, s.url ? "url" : "text", s.url ?? "");
    const ref = { namespace: kb.metadata.namespace || "default", knowledgeId: knowledgeIdOf(kb) };
    if (!kept.has(id)) await search.deleteDocument(ref, id);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`capstan standalone: ${(err as Error).message}\n`);
  supervisor.killAll();
  process.exit(1);
});
