// CapstanOperatorLeaderLost against what the operator really exports. Two operator replicas
// campaign for one Lease on the test API server, each serving /metrics on loopback as in a pod;
// their leader_election_master_status lines, read from those endpoints, become the input series of
// a promtool rule test (labelled as a ServiceMonitor scrape labels them: job, namespace, instance):
// with a leader among them the alert stays quiet; when the leader's series is gone (a leader that
// loses its Lease exits at once) and the standby cannot take over, it fires after its `for`.
// Before the standbys exported 0, a standby had no series at all and the alert could never fire.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parse, stringify } from "yaml";
import type { Operator } from "../../operator/src/manager.ts";
import { buildMetricsApp } from "../../operator/src/server.ts";
import { uniqueNamespace } from "../gateway/helpers.ts";
import { ensureNamespace, harnessKubeClient, installCrds } from "../ground/kube-client.ts";
import { parseSeries } from "../metrics/exposition.ts";
import { eventually, startOperatorFor } from "../operator/helpers.ts";
import { PROMTOOL, RULES_FILE } from "./prometheus.ts";

const ns = uniqueNamespace("leader");
const JOB = "capstan-operator";
const replicas: { id: string; operator: Operator; app: ReturnType<typeof buildMetricsApp>; url: string }[] = [];
const dir = mkdtempSync(join(tmpdir(), "capstan-leader-rule-"));

interface Alert {
  alert?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rule = (parse(readFileSync(RULES_FILE, "utf8")) as { groups: { rules: Alert[] }[] }).groups
  .flatMap((g) => g.rules)
  .find((r) => r.alert === "CapstanOperatorLeaderLost") as Alert;

beforeAll(async () => {
  const admin = harnessKubeClient();
  await installCrds(admin);
  await ensureNamespace(admin, ns);
  for (const id of ["replica-a", "replica-b"]) {
    const operator = startOperatorFor(inject("kubeconfig"), ns, {
      instanceId: id,
      leaderElection: { enabled: true, leaseName: `capstan-${ns}`, namespace: ns },
    });
    await operator.start();
    const app = buildMetricsApp(operator);
    await app.listen({ port: 0, host: "127.0.0.1" });
    replicas.push({ id, operator, app, url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` });
    // The first one leads before the second starts campaigning.
    if (id === "replica-a") await eventually("replica-a leads", () => operator.isLeader);
  }
}, 120_000);

afterAll(async () => {
  for (const r of replicas.reverse()) {
    await r.app.close();
    await r.operator.stop();
  }
  rmSync(dir, { recursive: true, force: true });
});

/** A replica's leader_election_master_status lines, as promtool input series (constant for 20 m). */
async function scraped(r: (typeof replicas)[number]) {
  const text = await (await fetch(`${r.url}/metrics`)).text();
  return parseSeries(text)
    .filter((s) => s.name === "leader_election_master_status")
    .map((s) => {
      const labels = { ...s.labels, job: JOB, namespace: ns, instance: r.id };
      const selector = Object.entries(labels)
        .map(([k, v]) => `${k}="${v}"`)
        .join(",");
      return { series: `${s.name}{${selector}}`, values: `${s.value}x20`, value: s.value };
    });
}

describe("CapstanOperatorLeaderLost on the operator's own series", () => {
  it("reads 1 from the leader and 0 from the standby", async () => {
    const [leader, standby] = replicas as [(typeof replicas)[number], (typeof replicas)[number]];
    expect((await scraped(leader)).map((s) => s.value)).toEqual([1]);
    expect((await scraped(standby)).map((s) => s.value)).toEqual([0]);
  });

  it("stays quiet while a replica leads, and fires when only standbys are left", async () => {
    const [leader, standby] = replicas as [(typeof replicas)[number], (typeof replicas)[number]];
    const both = [...(await scraped(leader)), ...(await scraped(standby))];
    const standbyOnly = await scraped(standby);
    expect(standbyOnly).toHaveLength(1);
    const strip = (xs: typeof both) => xs.map(({ series, values }) => ({ series, values }));
    const firing = {
      exp_labels: { ...rule.labels, job: JOB, namespace: ns },
      exp_annotations: rule.annotations,
    };
    const tests = {
      rule_files: [RULES_FILE],
      evaluation_interval: "1m",
      tests: [
        {
          interval: "1m",
          input_series: strip(both),
          alert_rule_test: [{ eval_time: "15m", alertname: "CapstanOperatorLeaderLost", exp_alerts: [] }],
        },
        {
          interval: "1m",
          input_series: strip(standbyOnly),
          alert_rule_test: [
            { eval_time: "3m", alertname: "CapstanOperatorLeaderLost", exp_alerts: [] },
            { eval_time: "10m", alertname: "CapstanOperatorLeaderLost", exp_alerts: [firing] },
          ],
        },
      ],
    };
    const file = join(dir, "leader.test.yaml");
    writeFileSync(file, stringify(tests));
    const res = await promisify(execFile)(PROMTOOL, ["test", "rules", file]).catch(
      (err: { stdout?: string; stderr?: string }) => {
        throw new Error(`promtool test rules failed:\n${err.stdout ?? ""}${err.stderr ?? ""}\n${stringify(tests)}`);
      },
    );
    expect(res.stdout).toContain("SUCCESS");
  });
});
