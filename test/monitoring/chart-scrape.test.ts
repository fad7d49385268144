// Whether the chart's monitoring objects can really reach what they mean to scrape, read the way
// the Prometheus Operator and a NetworkPolicy-enforcing CNI read them (real helm; the data plane's
// Services and pods as the operator renders them from the chart's config):
// - each ServiceMonitor's selector matches the Services that carry its ports (the operator's own
//   metrics Service once carried no app.kubernetes.io/name, so the operator was never scraped);
// - with the default values, a Prometheus pod in another namespace may reach every scraped port
//   through the NetworkPolicies (search's internal port once admitted the operator alone).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatewayObjects, searchObjects } from "../../operator/src/translate/workloads.ts";
import { ChartRun, MINIMAL, type Rendered } from "../operator/chart-kit.ts";

type Labels = Record<string, string>;
interface Selector {
  matchLabels?: Labels;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}
interface ServicePort {
  name?: string;
  port: number;
}
interface Peer {
  namespaceSelector?: Selector;
  podSelector?: Selector;
}
interface Policy {
  podSelector: Selector;
  ingress?: { ports?: { port: number }[]; from?: Peer[] }[];
}

const run = new ChartRun("scrape");
const ON = ["monitoring.serviceMonitor.enabled=true", "monitoring.podMonitor.enabled=true"];
/** The scraper's pod: Prometheus in the namespace "monitoring". */
const PROMETHEUS = {
  namespace: { "kubernetes.io/metadata.name": "monitoring" },
  pod: { "app.kubernetes.io/name": "prometheus" },
};
let objects: Rendered[];

beforeAll(async () => {
  await run.setup();
  const chart = await run.render([...MINIMAL, ...ON]);
  const c = run.operatorConfig(chart);
  objects = [...chart, ...(gatewayObjects(c, []) as Rendered[]), ...(searchObjects(c) as Rendered[])];
});
afterAll(() => run.cleanup());

const labelsOf = (o: Rendered) => (o.metadata as { labels?: Labels }).labels ?? {};

/** A Kubernetes label selector; an empty one selects everything. */
function selects(s: Selector | undefined, labels: Labels): boolean {
  const byLabel = Object.entries(s?.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpression = (s?.matchExpressions ?? []).every((e) => {
    const has = e.key in labels;
    if (e.operator === "In") return has && (e.values ?? []).includes(labels[e.key] as string);
    if (e.operator === "NotIn") return !has || !(e.values ?? []).includes(labels[e.key] as string);
    if (e.operator === "Exists") return has;
    return !has;
  });
  return byLabel && byExpression;
}

/** What the ServiceMonitors scrape: each Service they select, with the port names they scrape on it. */
function scraped(): { service: Rendered; port: ServicePort }[] {
  const services = objects.filter((o) => o.kind === "Service");
  return objects
    .filter((o) => o.kind === "ServiceMonitor")
    .flatMap((m) => {
      const names = ((m.spec?.endpoints ?? []) as { port: string }[]).map((e) => e.port);
      return services
        .filter((s) => selects(m.spec?.selector as Selector, labelsOf(s)))
        .flatMap((service) =>
          ((service.spec?.ports ?? []) as ServicePort[])
            .filter((p) => names.includes(p.name ?? ""))
            .map((port) => ({ service, port })),
        );
    });
}

/** NetworkPolicy semantics for one ingress connection from the Prometheus pod. */
function admitted(podLabels: Labels, port: number): boolean {
  const policies = objects
    .filter((o) => o.kind === "NetworkPolicy")
    .map((o) => o.spec as unknown as Policy)
    .filter((p) => selects(p.podSelector, podLabels));
  if (policies.length === 0) return true;
  const peerMatches = (peer: Peer) =>
    // A peer without a namespaceSelector means the policy's own namespace: not monitoring's.
    peer.namespaceSelector !== undefined &&
    selects(peer.namespaceSelector, PROMETHEUS.namespace) &&
    selects(peer.podSelector, PROMETHEUS.pod);
  return policies.some((p) =>
    (p.ingress ?? []).some(
      (rule) =>
        (rule.ports === undefined || rule.ports.some((r) => r.port === port)) &&
        (rule.from === undefined || rule.from.some(peerMatches)),
    ),
  );
}

describe("what the chart's monitoring objects reach", () => {
  it("the operator's ServiceMonitor selects the operator's metrics Service, the data plane's the gateway's and search's, the console's its own", () => {
    const targets = scraped().map(({ service, port }) => `${service.metadata.name}:${port.name}`);
    expect(targets.sort()).toEqual(
      [
        `${run.release}-capstan-operator-metrics:metrics`,
        "capstan-gateway:internal",
        "capstan-search:internal",
        // The console, on by default.
        `${run.release}-capstan-console:internal`,
      ].sort(),
    );
  });

  it("lets a Prometheus in another namespace reach every scraped port with the default NetworkPolicies", () => {
    const closed: string[] = [];
    for (const { service, port } of scraped()) {
      const selector = (service.spec?.selector ?? {}) as Labels;
      const pods = objects
        .filter((o) => o.kind === "Deployment")
        .map((d) => (d.spec as { template: { metadata: { labels: Labels } } }).template.metadata.labels)
        .filter((labels) => selects({ matchLabels: selector }, labels));
      expect(pods.length, `pods behind ${service.metadata.name}`).toBeGreaterThan(0);
      for (const pod of pods) if (!admitted(pod, port.port)) closed.push(`${service.metadata.name}:${port.port}`);
    }
    expect(closed).toEqual([]);
  });
});
