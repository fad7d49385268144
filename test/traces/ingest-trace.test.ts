// A KnowledgeBase ingest as one trace, across processes started as deployed (`node …/main.ts`):
// the operator reconciles the KnowledgeBase and calls the scraper (`node services/scraper/src/
// main.ts`, API and rendering service in one process, real Chromium), which renders a page of a
// loopback site; both export to a real OpenTelemetry Collector (test/ground/trace-receiver.ts). It must then hold ONE trace going from the
// operator's `reconcile KnowledgeBase` root span through its client call to the scraper, the
// scraper's server span, its `scrape` span, the call to the rendering service and the render's
// server span, down to the page fetch made for Chromium, and the site must have received that
// trace's `traceparent`. Search (the documents API the ingest writes to) runs in the test process.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import { freePort } from "../ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../ground/process.ts";
import {
  spanTree,
  startTraceReceiver,
  type Trace,
  type TraceReceiver,
  type TraceSpan,
} from "../ground/trace-receiver.ts";
import { CAP, create, whenCondition } from "../operator/helpers.ts";
import { type ServedSearch, startSearchForOperator } from "../operator/served-search.ts";
import { type Site, startSite } from "../scraper/helpers.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const ns = `ingest-trace-${process.pid}-${Date.now().toString(36)}`;
const TOKEN = "ingest-trace-test-token-0123456789";
const dir = mkdtempSync(join(tmpdir(), "capstan-ingest-trace-"));
const running: ManagedProcess[] = [];
let admin: TestKube;
let receiver: TraceReceiver;
let site: Site;
let search: ServedSearch;
/** The `traceparent` headers the site received for its page. */
const traceparents: string[] = [];

/** The environment of each process: OTEL_* to the trace receiver, nothing of the test runner's own. */
function env(vars: Record<string, string>): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith("CAPSTAN_") && !k.startsWith("OTEL_") && k !== "KUBECONFIG" && k !== "REDIS_URL",
    ),
  );
  return {
    ...clean,
    LOG_LEVEL: "warn",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.otlpEndpoint,
    OTEL_BSP_SCHEDULE_DELAY: "100",
    // Every trace recorded: the processes' default samples 1 % of new traces.
    OTEL_TRACES_SAMPLER: "parentbased_always_on",
    ...vars,
  };
}

beforeAll(async () => {
  admin = harnessKubeClient();
  await installCrds(admin);
  await ensureNamespace(admin, ns);
  receiver = await startTraceReceiver();
  site = await startSite();
  site.route("/runbook", (req, res) => {
    traceparents.push(String(req.headers.traceparent ?? ""));
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end("<html><head><title>Runbook</title></head><body><main><p>Restart the pump first.</p></main></body></html>");
  });

  const [port, adminPort, renderPort] = [await freePort(), await freePort(), await freePort()];
  const scraper = startProcess(
    "scraper",
    process.execPath,
    [join(root, "services/scraper/src/main.ts")],
    env({
      HOST: "127.0.0.1",
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      RENDER_PORT: String(renderPort),
      SCRAPER_ALLOWED_HOSTS: `127.0.0.1:${site.port}`,
    }),
  );
  running.push(scraper);
  const scraperUrl = `http://127.0.0.1:${port}`;

  search = await startSearchForOperator(admin, ns, TOKEN);

  const config = join(dir, "operator.yaml");
  writeFileSync(
    config,
    `search: {internalUrl: "${search.internalUrl}"}\nscraping: {url: "${scraperUrl}", timeout: 60, max_retries: 0}\n`,
  );
  const health = await freePort();
  const operator = startProcess(
    "operator",
    process.execPath,
    [join(root, "operator/src/main.ts")],
    env({
      KUBECONFIG: inject("kubeconfig"),
      CAPSTAN_OPERATOR_CONFIG: config,
      CAPSTAN_NAMESPACE: ns,
      CAPSTAN_WATCH_NAMESPACE: ns,
      LEADER_ELECT: "false",
      HEALTH_PORT: String(health),
      METRICS_PORT: String(await freePort()),
    }),
  );
  running.push(operator);
  await waitFor("scraper ready", async () => (await fetch(`${scraperUrl}/health`)).status === 200, {
    timeoutMs: 120_000,
    proc: scraper,
  });
  await waitFor("operator ready", async () => (await fetch(`http://127.0.0.1:${health}/readyz`)).status === 200, {
    timeoutMs: 180_000,
    proc: operator,
  });
}, 300_000);

afterAll(async () => {
  await Promise.all(running.map((p) => p.stop()));
  await search?.close();
  await site?.close();
  await receiver?.stop();
  await admin?.json(`/api/v1/namespaces/${ns}`, { method: "DELETE" }).catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

const tag = (s: TraceSpan, k: string) => s.tags.find((t) => t.key === k)?.value;
const parentOf = (s: TraceSpan) => s.references.find((r) => r.refType === "CHILD_OF")?.spanID;
const clientTo = (s: TraceSpan, url: string) =>
  tag(s, "span.kind") === "client" && String(tag(s, "url.full")).startsWith(url);
const serviceOf = (t: Trace, s: TraceSpan) => t.processes[s.processID]?.serviceName;

/** True when `ancestor` is `s` or above it in the trace. */
function below(t: Trace, s: TraceSpan, ancestor: TraceSpan): boolean {
  const byId = new Map(t.spans.map((x) => [x.spanID, x]));
  for (let cur: TraceSpan | undefined = s; cur; cur = byId.get(parentOf(cur) ?? "")) {
    if (cur.spanID === ancestor.spanID) return true;
  }
  return false;
}

describe("a KnowledgeBase ingest as one trace", () => {
  it("links the operator's reconcile, the scraper's spans and the page fetch, and sends the page its traceparent", async () => {
    await create(admin, {
      apiVersion: CAP,
      kind: "KnowledgeBase",
      metadata: { name: "runbooks", namespace: ns },
      spec: { sources: [{ name: "Runbook", url: `${site.origin}/runbook` }] },
    });
    await whenCondition(admin, "KnowledgeBase", ns, "runbooks", "Ingested", "True");

    // The reconcile that scraped: the trace holding the scraper's `scrape` span. Spans arrive
    // from two processes, each exporting in its own batches, so wait until the page fetch (the
    // scraper's last span) and the operator's call to the scraper (which ends after the scrape,
    // in a later batch of the operator's than its reconcile) are both there.
    let trace: Trace | undefined;
    await waitFor(
      "a reconcile KnowledgeBase trace down to the page fetch, with the operator's call to the scraper",
      async () => {
        for (const t of await receiver.traces("capstan-operator", "reconcile KnowledgeBase")) {
          const full = await receiver.trace(t.traceID);
          const fetched = full?.spans.some((s) => clientTo(s, `${site.origin}/runbook`));
          const called = full?.spans.some(
            (s) => serviceOf(full, s) === "capstan-operator" && /\/scrape$/.test(String(tag(s, "url.full"))),
          );
          if (full?.spans.some((s) => s.operationName === "scrape") && fetched && called) {
            trace = full;
            return true;
          }
        }
        return false;
      },
      { timeoutMs: 60_000 },
    );
    const t = trace as Trace;
    const tree = spanTree(t);
    console.log(`[ingest trace]\n${tree}`);
    const one = (what: string, pick: (s: TraceSpan) => boolean): TraceSpan => {
      const found = t.spans.filter(pick);
      expect(found.length, `${what}\n${tree}`).toBe(1);
      return found[0] as TraceSpan;
    };

    const reconcile = one("reconcile root", (s) => s.operationName === "reconcile KnowledgeBase");
    expect(parentOf(reconcile), tree).toBeUndefined();
    expect(tag(reconcile, "capstan.resource.name")).toBe("runbooks");
    expect(tag(reconcile, "k8s.namespace.name")).toBe(ns);

    const callScraper = one(
      "operator → scraper call",
      (s) =>
        serviceOf(t, s) === "capstan-operator" &&
        clientTo(s, "http://127.0.0.1:") &&
        /\/scrape$/.test(String(tag(s, "url.full"))),
    );
    expect(below(t, callScraper, reconcile), tree).toBe(true);
    const scraperServer = one(
      "scraper's server span",
      (s) =>
        serviceOf(t, s) === "capstan-scraper" && tag(s, "span.kind") === "server" && parentOf(s) === callScraper.spanID,
    );
    expect(scraperServer.operationName).toBe("POST /scrape");
    const scrape = one("scrape span", (s) => s.operationName === "scrape");
    expect(below(t, scrape, scraperServer), tree).toBe(true);

    // The API's call to the rendering service, the render's server span below it, and the page
    // fetch below that.
    const renders = t.spans.filter((s) => tag(s, "span.kind") === "server" && below(t, s, scrape));
    expect(renders.length, tree).toBe(1);
    const render = renders[0] as TraceSpan;
    const callRender = t.spans.find((s) => s.spanID === parentOf(render)) as TraceSpan;
    expect(tag(callRender, "span.kind"), tree).toBe("client");
    expect(below(t, callRender, scrape), tree).toBe(true);
    const page = one("page fetch", (s) => clientTo(s, `${site.origin}/runbook`));
    expect(below(t, page, render), tree).toBe(true);

    // W3C context on the last hop: the site saw this trace's id.
    expect(traceparents.some((h) => h.split("-")[1] === t.traceID)).toBe(true);
  });
});
