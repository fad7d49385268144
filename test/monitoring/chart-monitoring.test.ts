// The chart's monitoring objects with real helm: off by default; with their values on, two
// ServiceMonitors (operator metrics port; gateway/search internal and scraper admin ports; a third
// for the console's internal port when the console is on), a
// PodMonitor (the rendering containers), a PrometheusRule holding files/monitoring/rules.yaml with
// the key-expiry window from its value, and one dashboard ConfigMap per file in
// files/monitoring/dashboards that the API server accepts. The Prometheus Operator's CRDs are not
// installed on the test API server, so those three kinds are checked by shape, not dry-run.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ChartRun, MINIMAL, type Rendered } from "../operator/chart-kit.ts";
import { DASHBOARDS_DIR, RULES_FILE } from "./prometheus.ts";

const run = new ChartRun("mon");
const ON = [
  "monitoring.serviceMonitor.enabled=true",
  "monitoring.podMonitor.enabled=true",
  "monitoring.prometheusRule.enabled=true",
  "monitoring.prometheusRule.keyExpiryDays=30",
  "monitoring.dashboards.enabled=true",
  "monitoring.labels.release=kube-prometheus-stack",
];
const MONITORING_KINDS = ["ServiceMonitor", "PodMonitor", "PrometheusRule"];
let on: Rendered[];

beforeAll(async () => {
  await run.setup();
  on = await run.render([...MINIMAL, ...ON]);
});
afterAll(() => run.cleanup());

const dashboards = () => on.filter((o) => o.kind === "ConfigMap" && o.metadata.name.includes("-dashboard-"));

describe("chart monitoring objects", () => {
  it("renders none of them by default", async () => {
    const objects = await run.render(MINIMAL);
    expect(objects.filter((o) => MONITORING_KINDS.includes(o.kind))).toEqual([]);
    expect(objects.filter((o) => o.metadata.name.includes("-dashboard-"))).toEqual([]);
  });

  it("scrapes the operator's metrics port and the data plane's internal and admin ports", async () => {
    const monitors = on.filter((o) => o.kind === "ServiceMonitor");
    expect(monitors.map((m) => m.metadata.name).sort()).toEqual(
      [`${run.release}-capstan-data-plane`, `${run.release}-capstan-operator`, `${run.release}-capstan-console`].sort(),
    );
    const ports = (m: Rendered) => ((m.spec?.endpoints ?? []) as { port: string }[]).map((e) => e.port);
    const [dataPlane] = monitors.filter((m) => m.metadata.name.endsWith("-data-plane")) as [Rendered];
    expect(ports(dataPlane)).toEqual(["internal", "admin"]);
    expect(JSON.stringify(dataPlane.spec?.selector)).toContain("capstan-gateway");
    const [operator] = monitors.filter((m) => m.metadata.name.endsWith("-operator")) as [Rendered];
    expect(ports(operator)).toEqual(["metrics"]);
    // With the console on, its metrics are scraped from its internal port, through its Service.
    const withConsole = await run.render([...MINIMAL, ...ON, "console.enabled=true"]);
    const named = (kind: string) =>
      withConsole.find((o) => o.kind === kind && o.metadata.name.endsWith("-console")) as Rendered;
    const consoleMonitor = named("ServiceMonitor");
    expect(ports(consoleMonitor)).toEqual(["internal"]);
    const consoleService = named("Service");
    const serviceLabels = (consoleService.metadata as { labels?: Record<string, string> }).labels ?? {};
    const selector = (consoleMonitor.spec as { selector: { matchLabels: Record<string, string> } }).selector
      .matchLabels;
    expect(serviceLabels).toMatchObject(selector);
    expect(JSON.stringify(consoleService.spec)).toContain('"name":"internal"');
    const podMonitor = on.find((o) => o.kind === "PodMonitor");
    expect(((podMonitor?.spec?.podMetricsEndpoints ?? []) as { port: string }[])[0]?.port).toBe("render");
    for (const o of on.filter((x) => MONITORING_KINDS.includes(x.kind))) {
      expect(o.apiVersion).toBe("monitoring.coreos.com/v1");
      expect((o.metadata as { labels?: Record<string, string> }).labels?.release).toBe("kube-prometheus-stack");
    }
  });

  it("ships the rules file as a PrometheusRule, with the key-expiry window from its value", () => {
    const rule = on.find((o) => o.kind === "PrometheusRule");
    const file = parse(readFileSync(RULES_FILE, "utf8")) as { groups: { rules: { alert?: string; expr: string }[] }[] };
    const groups = rule?.spec?.groups as typeof file.groups;
    expect(groups.map((g) => g.rules.length)).toEqual(file.groups.map((g) => g.rules.length));
    const expiry = groups.flatMap((g) => g.rules).find((r) => r.alert === "CapstanKeyExpiringSoon");
    expect(expiry?.expr).toContain("(30 * 86400)");
    expect(JSON.stringify(rule)).toContain("{{ $labels.kind }}");
  });

  it("replaces an alert's `for` with monitoring.prometheusRule.for, and refuses a name that is no alert", async () => {
    const objects = await run.render([
      ...MINIMAL,
      ...ON,
      "monitoring.prometheusRule.for.CapstanLimiterBackendDown=10s",
      "monitoring.prometheusRule.for.CapstanTargetMissing=1m",
    ]);
    const groups = objects.find((o) => o.kind === "PrometheusRule")?.spec?.groups as {
      rules: { alert?: string; for?: string }[];
    }[];
    const forOf = (name: string) => groups.flatMap((g) => g.rules).find((r) => r.alert === name)?.for;
    expect([forOf("CapstanLimiterBackendDown"), forOf("CapstanTargetMissing")]).toEqual(["10s", "1m"]);
    // The others keep the file's.
    expect(forOf("CapstanOperatorLeaderLost")).toBe("5m");
    expect(
      await run.refused([...MINIMAL, ...ON, "monitoring.prometheusRule.for.CapstanLimiterBackendDwn=10s"]),
    ).toContain("monitoring.prometheusRule.for.CapstanLimiterBackendDwn: no alert of that name");
  });

  it("names each job after the component it scrapes, as the rules on missing targets expect", () => {
    const monitors = on.filter((o) => MONITORING_KINDS.slice(0, 2).includes(o.kind));
    const jobs = monitors.flatMap((m) => {
      const spec = m.spec as {
        jobLabel?: string;
        endpoints?: { relabelings?: { targetLabel: string; replacement: string }[] }[];
        podMetricsEndpoints?: { relabelings?: { targetLabel: string; replacement: string }[] }[];
      };
      if (spec.jobLabel) return [`<Service label ${spec.jobLabel}>`];
      return [...(spec.endpoints ?? []), ...(spec.podMetricsEndpoints ?? [])].flatMap((e) =>
        (e.relabelings ?? []).filter((r) => r.targetLabel === "job").map((r) => r.replacement),
      );
    });
    expect(jobs.sort()).toEqual([
      "<Service label app.kubernetes.io/name>",
      "capstan-console",
      "capstan-operator",
      "capstan-scraper-render",
    ]);
  });

  it("renders one dashboard ConfigMap per file, each accepted by the API server", async () => {
    const files = readdirSync(DASHBOARDS_DIR).filter((f) => f.endsWith(".json"));
    expect(files.sort()).toEqual(["gateway.json", "operator.json", "overview.json", "scraper.json", "search.json"]);
    expect(dashboards()).toHaveLength(files.length);
    for (const cm of dashboards()) {
      const [key, json] = Object.entries(cm.data ?? {})[0] as [string, string];
      expect(JSON.parse(json)).toEqual(JSON.parse(readFileSync(join(DASHBOARDS_DIR, key), "utf8")));
      expect((cm.metadata as { labels?: Record<string, string> }).labels?.grafana_dashboard).toBe("1");
      await run.apply(cm);
    }
  });
});
