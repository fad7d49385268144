// The platform bench/knowledge/bench.ts runs against, every part real and each in its own process
// so its memory is its own: a private etcd + kube-apiserver (test/ground/kube.ts), search
// (services/search/src/main.ts: its default local model, the embedded store persisted under a
// temporary folder), the scraper (services/scraper/src/main.ts, SCRAPER_ROLE=all: API and
// rendering service with the test ground's Chromium, crawl jobs in its memory) and the operator
// (operator/src/main.ts, configured to use both). Peak memory is sampled while they run.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRegistry } from "@capstan/shared";
import { kubeConfigFromFile } from "@capstan/shared/kube";
import { type KubeControlPlane, startKube } from "../../test/ground/kube.ts";
import { ensureNamespace, installCrds } from "../../test/ground/kube-setup.ts";
import { freePort } from "../../test/ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../../test/ground/process.ts";
import { TestKube } from "../../test/ground/test-kube.ts";
import { processTree, pssMiB } from "../process-tree.ts";

const main = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const TOKEN = "knowledge-bench-internal-token-0123456789";

export interface Stack {
  kube: TestKube;
  namespace: string;
  /** search's internal port: documents API, the internal token's search, /metrics. */
  searchInternal: string;
  token: string;
  procs: { operator: ManagedProcess; search: ManagedProcess; scraper: ManagedProcess };
  /** Peak memory in MiB: each Node process's VmHWM, and the scraper's Chromium processes' summed PSS (sampled). */
  peaks(): { operator: number; search: number; scraper: number; chromium: number };
  stop(): Promise<void>;
}

/** Environment without this shell's Capstan settings, so each process gets only what is set here. */
const cleanEnv = () =>
  Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(CAPSTAN_|SCRAPER_|OTEL_)/.test(k)));

/** Peak resident set of a process in MiB (the kernel's high-water mark, VmHWM). */
function peakRssMiB(pid: number | undefined): number {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return Number(m?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/** The two Secrets the operator would generate (it never overwrites them): search's internal token and the key verifier. */
async function operatorSecrets(kube: TestKube, namespace: string): Promise<void> {
  for (const [name, key, value] of [
    ["capstan-internal-token", "token", TOKEN],
    ["capstan-key-verifier", "key", "knowledge-bench-key-verifier-0123456789"],
  ] as const) {
    await kube.json(`/api/v1/namespaces/${namespace}/secrets`, {
      method: "POST",
      body: {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name, namespace, labels: { "app.kubernetes.io/managed-by": "capstan-operator" } },
        data: { [key]: Buffer.from(value).toString("base64") },
      },
    });
  }
}

async function startSearch(kubeconfig: string, dataDir: string) {
  const [port, internal] = [await freePort(), await freePort()];
  const proc = startProcess("search", process.execPath, [main("services/search/src/main.ts")], {
    ...cleanEnv(),
    PORT: String(port),
    CAPSTAN_INTERNAL_PORT: String(internal),
    HOST: "127.0.0.1",
    CAPSTAN_INTERNAL_TOKEN: TOKEN,
    CAPSTAN_DATA_DIR: dataDir,
    KUBECONFIG: kubeconfig,
    LOG_LEVEL: "warn",
    OTEL_SDK_DISABLED: "true",
  });
  const url = `http://127.0.0.1:${internal}`;
  await waitFor("search ready", async () => (await fetch(`${url}/readyz`)).status === 200, {
    timeoutMs: 180_000,
    proc,
  });
  return { proc, url };
}

async function startScraper(siteHost: string, concurrency: number) {
  const [port, admin, render] = [await freePort(), await freePort(), await freePort()];
  const proc = startProcess("scraper", process.execPath, [main("services/scraper/src/main.ts")], {
    ...cleanEnv(),
    SCRAPER_ROLE: "all",
    PORT: String(port),
    ADMIN_PORT: String(admin),
    RENDER_PORT: String(render),
    HOST: "127.0.0.1",
    SCRAPER_ALLOWED_HOSTS: siteHost,
    WORKER_CONCURRENCY: String(concurrency),
    SCRAPER_HOST_CONCURRENCY: String(concurrency),
    LOGGING_LEVEL: "warn",
    OTEL_SDK_DISABLED: "true",
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor("scraper listening", async () => (await fetch(`${url}/health`)).status === 200, {
    timeoutMs: 120_000,
    proc,
  });
  return { proc, url };
}

async function startOperator(kubeconfig: string, dir: string, config: Record<string, unknown>) {
  const [metrics, health] = [await freePort(), await freePort()];
  const file = join(dir, "operator.json");
  writeFileSync(file, JSON.stringify({ ...config, metricsPort: metrics, healthPort: health }));
  const proc = startProcess("operator", process.execPath, [main("operator/src/main.ts")], {
    ...cleanEnv(),
    CAPSTAN_OPERATOR_CONFIG: file,
    KUBECONFIG: kubeconfig,
    LOG_LEVEL: "warn",
    OTEL_SDK_DISABLED: "true",
  });
  const url = `http://127.0.0.1:${health}/readyz`;
  await waitFor("operator ready", async () => (await fetch(url)).status === 200, { timeoutMs: 120_000, proc });
  return proc;
}

/** Starts the whole platform for a site served at `siteHost`; the scraper renders `concurrency` pages at once. */
export async function startStack(siteHost: string, concurrency: number): Promise<Stack> {
  const namespace = "bench";
  const dir = mkdtempSync(join(tmpdir(), "capstan-knowledge-bench-"));
  const control: KubeControlPlane = await startKube();
  const kube = new TestKube(kubeConfigFromFile(control.kubeconfig), createRegistry({ defaultMetrics: false }));
  await installCrds(kube);
  await ensureNamespace(kube, namespace);
  await operatorSecrets(kube, namespace);
  const [search, scraper] = await Promise.all([
    startSearch(control.kubeconfig, join(dir, "search")),
    startScraper(siteHost, concurrency),
  ]);
  const operator = await startOperator(control.kubeconfig, dir, {
    namespace,
    watchNamespace: namespace,
    leaderElection: { enabled: false },
    search: { internalUrl: search.url },
    scraping: { url: scraper.url, timeout: 60, max_retries: 2 },
  });
  const procs = { operator, search: search.proc, scraper: scraper.proc };
  let chromium = 0;
  const sampler = setInterval(() => {
    chromium = Math.max(chromium, pssMiB(processTree(scraper.proc.child.pid as number).slice(1)));
  }, 5_000);
  return {
    kube,
    namespace,
    searchInternal: search.url,
    token: TOKEN,
    procs,
    peaks: () => ({
      operator: peakRssMiB(operator.child.pid),
      search: peakRssMiB(search.proc.child.pid),
      scraper: peakRssMiB(scraper.proc.child.pid),
      chromium,
    }),
    stop: async () => {
      clearInterval(sampler);
      await procs.operator.stop();
      await Promise.all([procs.search.stop(), procs.scraper.stop()]);
      await control.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
