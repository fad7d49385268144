// Two releases of charts/capstan side by side on the test API server, and what `helm install`
// prints. Each release watches its own namespace; every cluster-scoped object carries the release
// name; a release that would watch a namespace another release watches (or every namespace while
// another release exists) is refused at install with the reason. NOTES.txt names the release's real
// objects and says http or https as the Ingress's TLS says. The `helm test` Pod is accepted by the
// API server; it runs on the e2e node (test/e2e/releases.test.ts).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { helm } from "../ground/helm.ts";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import { chart, dryRunApply, helmTemplate, KINDS, MINIMAL, one, parseRendered, type Rendered } from "./chart-kit.ts";

const suffix = `${process.pid}-${Date.now().toString(36)}`;
/** Two releases, each in its own namespace and watching its own tenant namespace. */
const releases = ["a", "b"].map((r) => ({
  name: `side-${r}-${suffix}`,
  ns: `side-${r}-${suffix}`,
  watch: `tenant-${r}-${suffix}`,
}));
const installed: { name: string; ns: string }[] = [];

let home: string;
let admin: TestKube;
let kubeconfig: string;

/** Values of a release: its admission policy and its operator limited to its tenant namespace. */
function values(watch: string, extra: string[] = []): string[] {
  return [
    ...MINIMAL,
    "installCRDs=false",
    `admission.namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=${watch}`,
    ...(watch ? [`operator.watchNamespaces[0]=${watch}`] : []),
    ...extra,
  ].flatMap((v) => ["--set", v]);
}

async function install(name: string, ns: string, set: string[]) {
  const res = await helm(["install", name, chart, "-n", ns, "--kubeconfig", kubeconfig, ...set], home);
  if (res.code === 0) installed.push({ name, ns });
  return res;
}

/** The objects of an installed release, as Helm stored them. */
async function manifest(name: string, ns: string): Promise<Rendered[]> {
  const res = await helm(["get", "manifest", name, "-n", ns, "--kubeconfig", kubeconfig], home);
  expect(res.code, res.stderr).toBe(0);
  return parseRendered(res.stdout);
}

const key = (o: Rendered, ns: string) =>
  `${o.kind}/${KINDS[o.kind]?.namespaced === false ? "" : (o.metadata.namespace ?? ns)}/${o.metadata.name}`;

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "capstan-releases-"));
  kubeconfig = inject("kubeconfig");
  admin = harnessKubeClient();
  await installCrds(admin);
  for (const r of releases) {
    await ensureNamespace(admin, r.ns);
    await ensureNamespace(admin, r.watch);
  }
});

afterAll(async () => {
  for (const r of installed.reverse())
    await helm(["uninstall", r.name, "-n", r.ns, "--kubeconfig", kubeconfig], home).catch(() => {});
  if (home) rmSync(home, { recursive: true, force: true });
});

describe("two releases side by side", () => {
  it("install together, share no object, and print NOTES that name their own objects", async () => {
    const outputs: string[] = [];
    for (const r of releases) {
      const res = await install(r.name, r.ns, values(r.watch));
      expect(res.stderr).toBe("");
      expect(res.code).toBe(0);
      outputs.push(res.stdout);
    }
    const [a, b] = await Promise.all(releases.map((r) => manifest(r.name, r.ns)));
    const keysA = new Set((a as Rendered[]).map((o) => key(o, releases[0]?.ns ?? "")));
    const shared = (b as Rendered[]).map((o) => key(o, releases[1]?.ns ?? "")).filter((k) => keysA.has(k));
    expect(shared).toEqual([]);
    for (const [i, r] of releases.entries()) {
      const objects = i === 0 ? (a as Rendered[]) : (b as Rendered[]);
      const clusterScoped = objects.filter((o) => KINDS[o.kind]?.namespaced === false);
      expect(clusterScoped.length).toBeGreaterThan(0);
      for (const o of clusterScoped) expect(o.metadata.name, `${o.kind} ${o.metadata.name}`).toContain(r.name);
      // The data-plane ClusterRole says which namespaces this release's operator owns.
      const role = one(objects, "ClusterRole", `${r.name}-capstan-data-plane`);
      expect(role.metadata.annotations?.["capstan.dev/watch-namespaces"]).toBe(JSON.stringify([r.watch]));
      // NOTES.txt: the helm test command of this release, and no https without TLS.
      expect(outputs[i]).toContain(`helm test ${r.name} -n ${r.ns}`);
      expect(outputs[i]).not.toContain("https://");
    }
  });

  it("refuses a third release that would watch a namespace another release watches", async () => {
    const [a] = releases as [(typeof releases)[0]];
    const thirdNs = `side-c-${suffix}`;
    await ensureNamespace(admin, thirdNs);
    const overlap = await install(`side-c-${suffix}`, thirdNs, values(a.watch));
    expect(overlap.code).not.toBe(0);
    expect(overlap.stderr).toContain(`release ${a.ns}/${a.name} already watches namespaces ["${a.watch}"]`);
    // Watching every namespace overlaps with every release.
    const all = await install(`side-c-${suffix}`, thirdNs, values(""));
    expect(all.code).not.toBe(0);
    expect(all.stderr).toMatch(/already watches namespaces .*; this release would watch every namespace/);
    // An upgrade of a release is not an overlap with itself.
    const upgrade = await helm(
      ["upgrade", a.name, chart, "-n", a.ns, "--kubeconfig", kubeconfig, ...values(a.watch, ["operator.replicas=1"])],
      home,
    );
    expect(upgrade.stderr).toBe("");
    expect(upgrade.code).toBe(0);
  });
});

describe("NOTES.txt and the helm test Pod", () => {
  it("says https only for hosts the Ingress has a certificate for, and names the console's Service", async () => {
    const ns = `notes-${suffix}`;
    const base = ["--dry-run=client", "notes", chart, "-n", ns, "--kubeconfig", kubeconfig];
    base.push(...values(`tenant-n-${suffix}`));
    const tls = await helm(
      [
        "install",
        ...base,
        ...["--set", "ingress.enabled=true", "--set", "ingress.hosts[0]=ai.example.com"],
        ...["--set", "ingress.tls[0].secretName=t", "--set", "ingress.tls[0].hosts[0]=ai.example.com"],
        ...["--set", "console.enabled=true"],
      ],
      home,
    );
    expect(tls.code, tls.stderr).toBe(0);
    expect(tls.stdout).toContain("Chat:   https://ai.example.com/api/v1/chat/completions");
    expect(tls.stdout).toContain("Search: https://ai.example.com/v1/rag/search");
    const services = parseRendered(tls.stdout.split("NOTES:")[0] ?? "").filter((o) => o.kind === "Service");
    const forward = /port-forward svc\/(\S+) 8097:(\d+)/.exec(tls.stdout);
    expect(forward, tls.stdout).not.toBeNull();
    const console = one(services, "Service", forward?.[1] as string);
    expect(JSON.stringify(console.spec)).toContain(`"port":${forward?.[2]}`);

    const plain = await helm(
      ["install", ...base, "--set", "ingress.enabled=true", "--set", "ingress.hosts[0]=ai.example.com"],
      home,
    );
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toContain("Chat:   http://ai.example.com/api/v1/chat/completions");
    expect(plain.stdout).not.toContain("https://");
  });

  it("renders a test Pod the API server accepts, reaching the release's Services", async () => {
    const r = releases[0] as (typeof releases)[0];
    const res = await helmTemplate(home, r.name, r.ns, [
      ...MINIMAL,
      "networkPolicy.metricsFrom[0].podSelector.matchLabels.app=prometheus",
    ]);
    expect(res.code, res.stderr).toBe(0);
    const objects = parseRendered(res.stdout);
    const pod = one(objects, "Pod");
    expect(pod.metadata.annotations?.["helm.sh/hook"]).toBe("test");
    const script = JSON.stringify(pod.spec);
    expect(script).toContain(`http://capstan-gateway.${r.ns}.svc:8090/readyz`);
    expect(script).toContain(`http://capstan-search.${r.ns}.svc:8091/readyz`);
    // The gateway's public port as its Service exposes it (gateway.servicePort), not the pod's.
    expect(script).toContain(`http://capstan-gateway.${r.ns}.svc:80/api/v1/chat/completions`);
    await dryRunApply(admin, pod, r.ns);
    // With metricsFrom set, the internal ports admit the test Pod by its labels.
    const labels = (pod.metadata as { labels?: Record<string, string> }).labels ?? {};
    for (const name of ["capstan-gateway", "capstan-search"]) {
      const policy = JSON.stringify(one(objects, "NetworkPolicy", name).spec);
      expect(policy).toContain(
        JSON.stringify({
          "app.kubernetes.io/name": labels["app.kubernetes.io/name"],
          "app.kubernetes.io/instance": r.name,
        }),
      );
    }
    const off = await helmTemplate(home, r.name, r.ns, [...MINIMAL, "tests.enabled=false"]);
    expect(parseRendered(off.stdout).filter((o) => o.kind === "Pod")).toEqual([]);
  });
});
