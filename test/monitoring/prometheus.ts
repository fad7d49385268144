// A real Prometheus for the monitoring tests: Debian's /usr/bin/prometheus (installed by
// scripts/setup.d/60-prometheus.sh), one per test file on a free loopback port with a temporary
// storage dir, scraping the targets the test names every second and loading the chart's rules.
// Queries go through its HTTP API.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { freePort } from "../ground/ports.ts";
import { startProcess, waitFor } from "../ground/process.ts";

export const PROMETHEUS = process.env.CAPSTAN_PROMETHEUS ?? "/usr/bin/prometheus";
export const PROMTOOL = process.env.CAPSTAN_PROMTOOL ?? "/usr/bin/promtool";
export const MONITORING_DIR = fileURLToPath(new URL("../../charts/capstan/files/monitoring/", import.meta.url));
export const RULES_FILE = join(MONITORING_DIR, "rules.yaml");
export const DASHBOARDS_DIR = join(MONITORING_DIR, "dashboards");

for (const bin of [PROMETHEUS, PROMTOOL]) {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run bash scripts/setup.d/60-prometheus.sh`);
}

export interface ScrapeTarget {
  /** The job label, as a ServiceMonitor would set it (the Service's name); targets may share one (replicas). */
  job: string;
  /** host:port of the /metrics endpoint. */
  address: string;
  labels?: Record<string, string>;
}

export interface QueryResult {
  status: string;
  error?: string;
  data?: { resultType: string; result: { metric: Record<string, string>; value?: [number, string] }[] };
}

export interface RunningPrometheus {
  url: string;
  /** Unix seconds when it became ready: its data starts here. */
  startedAt: number;
  query(expr: string): Promise<QueryResult>;
  /** Waits until every target has been scraped successfully at least once. */
  waitForTargets(): Promise<void>;
  stop(): Promise<void>;
}

export async function startPrometheus(targets: ScrapeTarget[]): Promise<RunningPrometheus> {
  const dir = mkdtempSync(join(tmpdir(), "capstan-prometheus-"));
  const port = await freePort();
  const config = {
    global: { scrape_interval: "1s", scrape_timeout: "1s", evaluation_interval: "1s" },
    rule_files: [RULES_FILE],
    scrape_configs: [...new Set(targets.map((t) => t.job))].map((job) => ({
      job_name: job,
      static_configs: targets
        .filter((t) => t.job === job)
        .map((t) => ({ targets: [t.address], labels: { namespace: "capstan", ...t.labels } })),
    })),
  };
  writeFileSync(join(dir, "prometheus.yml"), stringify(config));
  const proc = startProcess("prometheus", PROMETHEUS, [
    `--config.file=${join(dir, "prometheus.yml")}`,
    `--storage.tsdb.path=${join(dir, "data")}`,
    `--web.listen-address=127.0.0.1:${port}`,
    "--web.enable-lifecycle",
    "--log.level=warn",
  ]);
  const url = `http://127.0.0.1:${port}`;
  await waitFor("prometheus ready", async () => (await fetch(`${url}/-/ready`)).ok, { timeoutMs: 60_000, proc });

  const query = async (expr: string): Promise<QueryResult> => {
    const res = await fetch(`${url}/api/v1/query`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ query: expr }),
    });
    return (await res.json()) as QueryResult;
  };
  return {
    url,
    startedAt: Date.now() / 1000,
    query,
    async waitForTargets() {
      await waitFor(
        "every target scraped",
        async () => {
          const r = (await (await fetch(`${url}/api/v1/targets`)).json()) as {
            data: { activeTargets: { health: string }[] };
          };
          const active = r.data.activeTargets;
          return active.length === targets.length && active.every((t) => t.health === "up");
        },
        { timeoutMs: 60_000, proc },
      );
    },
    async stop() {
      await proc.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
