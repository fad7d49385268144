// Smoke test of the e2e cluster itself (test/ground/node.ts): the node is Ready, a pod runs from a
// locally built image, a Service reaches it by ClusterIP and by DNS name from another pod (which
// also reaches the API server through the `kubernetes` Service with its ServiceAccount token) and
// from the host, names outside cluster.local are not resolved, pod logs come through the API, an
// Ingress with a TLS Secret routes HTTPS through Traefik to the Service, and NetworkPolicies are
// enforced (kube-network-policies): ingress and egress, pod to pod and through a Service, and the
// node's own traffic as docs/testing.md describes it.
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { KubeApiError } from "@capstan/shared/kube";
import { CoreV1Api } from "@kubernetes/client-node";
import { Agent, fetch } from "undici";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parse } from "yaml";
import { signCert } from "../ground/kube.ts";
import { kubeHttpFrom, type TestKube } from "../ground/kube-client.ts";
import { nodeBinaries } from "../ground/node-binaries.ts";
import { net } from "../ground/node-config.ts";
import { traefikUid } from "../ground/node-daemons.ts";
import { eventually } from "./support/kube.ts";
import { type BusyboxPod, createNamespace, deleteNamespace, httpFromPod, startBusybox } from "./support/pods.ts";

const ns = `smoke-${process.pid}`;
const host = "smoke.capstan.test";
const page = "hello from the capstan node";
let kube: TestKube;
let image: string;
let tlsDir: string;

type Pod = { status?: { phase?: string; podIP?: string; conditions?: { type: string; status: string }[] } };

async function poll<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const got = await fn();
      if (got !== undefined) return got;
    } catch (err) {
      // undici's "fetch failed" hides the reason in `cause`.
      const cause = (err as { cause?: { message?: string } }).cause?.message;
      last = cause ? `${(err as Error).message}: ${cause}` : (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`gave up waiting for ${what}${last ? ` (${last})` : ""}`);
}

const create = (path: string, body: object) => kube.json(path, { method: "POST", body });
const pod = (name: string) => kube.json<Pod>(`/api/v1/namespaces/${ns}/pods/${name}`);

function busyboxPod(name: string, labels: Record<string, string>, script: string, restartPolicy: string) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, labels },
    spec: {
      restartPolicy,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: "main", image, imagePullPolicy: "Never", command: ["/bin/sh", "-c", script] }],
    },
  };
}

beforeAll(async () => {
  kube = kubeHttpFrom(inject("e2eKubeconfig"));
  image = nodeBinaries().busyboxImage;
  await create("/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
  // ServiceAccount admission refuses pods until the namespace's default ServiceAccount exists.
  await poll("default ServiceAccount", 30_000, () =>
    kube.json(`/api/v1/namespaces/${ns}/serviceaccounts/default`).then(() => true),
  );
  // A CA of the test's own and a serving certificate for the Ingress host, as a TLS Secret.
  tlsDir = mkdtempSync(join(tmpdir(), "capstan-smoke-tls-"));
  execFileSync(
    "openssl",
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt"].concat([
      "-days",
      "1",
      "-subj",
      "/CN=capstan-smoke-ca",
    ]),
    { cwd: tlsDir, stdio: "pipe" },
  );
  signCert(tlsDir, "tls", `/CN=${host}`, `subjectAltName=DNS:${host}\nextendedKeyUsage=serverAuth\n`);
  const b64 = (f: string) => readFileSync(join(tlsDir, f)).toString("base64");
  await create(`/api/v1/namespaces/${ns}/secrets`, {
    apiVersion: "v1",
    kind: "Secret",
    type: "kubernetes.io/tls",
    metadata: { name: "smoke-tls" },
    data: { "tls.crt": b64("tls.crt"), "tls.key": b64("tls.key") },
  });
});

afterAll(async () => {
  if (tlsDir) rmSync(tlsDir, { recursive: true, force: true });
  try {
    await kube?.json(`/api/v1/namespaces/${ns}`, { method: "DELETE" });
  } catch (err) {
    if (!(err instanceof KubeApiError) || err.status !== 404) throw err;
  }
});

describe("the e2e cluster", () => {
  it("has one Ready node", async () => {
    const nodes = await kube.json<{ items: { status: { conditions: { type: string; status: string }[] } }[] }>(
      "/api/v1/nodes",
    );
    expect(nodes.items).toHaveLength(1);
    expect(nodes.items[0]?.status.conditions.find((c) => c.type === "Ready")?.status).toBe("True");
  });

  it("runs a pod behind a Service reachable by ClusterIP and DNS, from pods and the host", async () => {
    const script = `mkdir -p /www && echo '${page}' > /www/index.html && exec httpd -f -p 8080 -h /www`;
    await create(`/api/v1/namespaces/${ns}/pods`, busyboxPod("web", { app: "web" }, script, "Always"));
    const svc = await kube.json<{ spec: { clusterIP: string } }>(`/api/v1/namespaces/${ns}/services`, {
      method: "POST",
      body: {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "web" },
        spec: { selector: { app: "web" }, ports: [{ port: 80, targetPort: 8080 }] },
      },
    });
    const running = await poll("pod web Running", 60_000, async () => {
      const p = await pod("web");
      return p.status?.phase === "Running" && p.status.podIP ? p : undefined;
    });
    expect(running.status?.podIP).toMatch(/^198\.18\./);
    expect(svc.spec.clusterIP).toMatch(/^198\.19\./);

    // From the host through kube-proxy's rules (retried: the rules follow the EndpointSlice).
    const fromHost = await poll("the ClusterIP from the host", 30_000, async () => {
      const res = await fetch(`http://${svc.spec.clusterIP}/`, { signal: AbortSignal.timeout(2000) });
      return res.ok ? res.text() : undefined;
    });
    expect(fromHost.trim()).toBe(page);

    // From another pod: by DNS name, by ClusterIP, the API server through the `kubernetes`
    // Service with the pod's ServiceAccount token, and a name outside the cluster (refused).
    const sa = "/var/run/secrets/kubernetes.io/serviceaccount";
    // Bounded by busybox `timeout` (Debian's static busybox wget crashes on its own -T option).
    const get = (url: string, extra = "") => `timeout 10 wget -q -O- ${extra} ${url}`;
    const client = [
      `echo "dns=$(${get(`http://web.${ns}.svc.cluster.local/`)})"`,
      `echo "ip=$(${get(`http://${svc.spec.clusterIP}/`)})"`,
      `test -s ${sa}/token && test -s ${sa}/ca.crt && echo token=present`,
      // busybox's own TLS cannot negotiate with the API server's ciphers, so from the pod: the
      // Service name resolves and its port accepts; the TLS side is checked from the host below.
      `echo "api=$(nslookup kubernetes.default.svc.cluster.local 2>&1 | grep -c ${net.kubernetesServiceIp})"`,
      `timeout 10 nc kubernetes.default.svc 443 </dev/null && echo api-port=open`,
      'echo "outside=$(timeout 10 nslookup example.com 2>&1 | grep -o REFUSED | head -n 1)"',
    ].join("; ");
    await create(`/api/v1/namespaces/${ns}/pods`, busyboxPod("client", {}, client, "Never"));
    const phase = await poll("pod client finished", 90_000, async () => {
      const p = await pod("client");
      return p.status?.phase === "Succeeded" || p.status?.phase === "Failed" ? p.status.phase : undefined;
    });
    // Logs through the API server, which fetches them from the kubelet.
    const logs = await new CoreV1Api(kube.configuration).readNamespacedPodLog({ name: "client", namespace: ns });
    expect(phase, logs).toBe("Succeeded");
    expect(logs).toContain(`dns=${page}`);
    expect(logs).toContain(`ip=${page}`);
    expect(logs).toContain("token=present");
    expect(logs).toContain("api=1");
    expect(logs).toContain("api-port=open");
    expect(logs).toContain("outside=REFUSED");
  });

  it("serves the API server at the kubernetes Service IP with a certificate for its in-cluster name", async () => {
    const config = parse(readFileSync(inject("e2eKubeconfig"), "utf8")) as {
      clusters: { cluster: { "certificate-authority-data": string } }[];
    };
    const ca = Buffer.from(config.clusters[0]?.cluster["certificate-authority-data"] ?? "", "base64");
    // Verified against the cluster CA under the name pods use (in-cluster config dials the IP).
    const agent = new Agent({ connect: { ca, servername: "kubernetes.default.svc" } });
    try {
      const res = await fetch(`https://${net.kubernetesServiceIp}/version`, {
        dispatcher: agent,
        signal: AbortSignal.timeout(5000),
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { gitVersion: string }).gitVersion).toMatch(/^v1\.35\./);
    } finally {
      await agent.close();
    }
  });

  it("routes HTTPS through Traefik to the Service with the Ingress's TLS Secret", async () => {
    await create(`/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses`, {
      apiVersion: "networking.k8s.io/v1",
      kind: "Ingress",
      metadata: { name: "web" },
      spec: {
        ingressClassName: "traefik",
        tls: [{ hosts: [host], secretName: "smoke-tls" }],
        rules: [
          {
            host,
            http: {
              paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }],
            },
          },
        ],
      },
    });
    const https = new URL(inject("e2eIngressHttps"));
    // Trusts only the test's CA: a response proves Traefik served the Secret's certificate.
    const agent = new Agent({
      connect: {
        ca: readFileSync(join(tlsDir, "ca.crt")),
        servername: host,
        // Node's net.connect asks with { all: true } (happy eyeballs), expecting a list back.
        lookup: (_h: string, o: { all?: boolean }, cb: (e: Error | null, a: unknown, f?: number) => void) =>
          o.all ? cb(null, [{ address: https.hostname, family: 4 }]) : cb(null, https.hostname, 4),
      } as never,
    });
    try {
      const body = await poll("Traefik to route the Ingress", 60_000, async () => {
        const res = await fetch(`https://${host}:${https.port}/`, {
          dispatcher: agent,
          signal: AbortSignal.timeout(3000),
        });
        return res.status === 200 ? res.text() : undefined;
      });
      expect(body.trim()).toBe(page);
    } finally {
      await agent.close();
    }
  });
});

describe("NetworkPolicies on the node (kube-network-policies)", () => {
  const npNs = `${ns}-np`;
  let server: BusyboxPod;
  let client: BusyboxPod;
  let other: BusyboxPod;
  let serviceIp: string;
  const policies = `/apis/networking.k8s.io/v1/namespaces/${npNs}/networkpolicies`;
  const policy = (name: string, spec: object) =>
    create(policies, { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", metadata: { name }, spec });
  const removePolicy = (name: string) => kube.json(`${policies}/${name}`, { method: "DELETE" });
  /** Whether `from` gets the server's page, by pod address (bridged) or by ClusterIP (routed). */
  const reaches = async (from: BusyboxPod, via: "pod" | "service") => {
    const url = via === "pod" ? `http://${server.ip}:8080/` : `http://${serviceIp}/`;
    const res = await httpFromPod(kube, from, url, { timeoutS: 2 });
    return res.connected && res.body.includes("pod server");
  };
  /** Waits until every pair answers as expected (the daemon follows the API within a second or so). */
  const expectReach = async (want: [BusyboxPod, "pod" | "service", boolean][]) => {
    let seen = "";
    await eventually(
      "the node to enforce the policies",
      async () => {
        const got = await Promise.all(want.map(([from, via]) => reaches(from, via)));
        seen = want.map(([from, via], i) => `${from.name} via ${via}: ${got[i]}`).join(", ");
        return got.every((g, i) => g === want[i]?.[2]) ? true : undefined;
      },
      30_000,
      500,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; saw ${seen}`);
    });
  };
  /** A process on the node itself, as uid `uid`, fetching the server's page (true when it gets it). */
  const fromNode = async (uid: number) => {
    const args = [`--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", "/bin/busybox", "timeout", "2"];
    try {
      const { stdout } = await promisify(execFile)("setpriv", [
        ...args,
        "wget",
        "-q",
        "-O-",
        `http://${server.ip}:8080/`,
      ]);
      return stdout.includes("pod server");
    } catch {
      return false;
    }
  };

  beforeAll(async () => {
    await createNamespace(kube, npNs);
    [server, client, other] = await Promise.all([
      startBusybox(kube, npNs, "server", { labels: { app: "server" }, port: 8080 }),
      startBusybox(kube, npNs, "client", { labels: { role: "client" } }),
      startBusybox(kube, npNs, "other", { labels: { role: "other" } }),
    ]);
    const svc = await kube.json<{ spec: { clusterIP: string } }>(`/api/v1/namespaces/${npNs}/services`, {
      method: "POST",
      body: {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "server" },
        spec: { selector: { app: "server" }, ports: [{ port: 80, targetPort: 8080 }] },
      },
    });
    serviceIp = svc.spec.clusterIP;
  }, 120_000);

  afterAll(async () => {
    await deleteNamespace(kube, npNs);
  });

  it("lets every pod reach the server while no policy selects it", async () => {
    await expectReach([
      [client, "pod", true],
      [client, "service", true],
      [other, "pod", true],
    ]);
    expect(await fromNode(traefikUid)).toBe(true);
  });

  it("refuses every pod once a default-deny ingress policy selects the server; an allow rule admits only its peers", async () => {
    await policy("default-deny", { podSelector: {}, policyTypes: ["Ingress"] });
    await expectReach([
      [client, "pod", false],
      [client, "service", false],
      [other, "pod", false],
    ]);
    // The node's own traffic: a root process (the kubelet's probes, this test) always passes, as the
    // NetworkPolicy API says traffic from a pod's node does; an unprivileged one (Traefik here) is
    // judged like any peer, from the node's address.
    expect(await fromNode(0)).toBe(true);
    expect(await fromNode(traefikUid)).toBe(false);
    // ...so the server's readiness probe (1 s period, 3 failures) still passes.
    await new Promise((r) => setTimeout(r, 3000));
    const probed = await kube.json<Pod>(`/api/v1/namespaces/${npNs}/pods/server`);
    expect(probed.status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
    await policy("allow-clients", {
      podSelector: { matchLabels: { app: "server" } },
      policyTypes: ["Ingress"],
      ingress: [
        { from: [{ podSelector: { matchLabels: { role: "client" } } }], ports: [{ port: 8080, protocol: "TCP" }] },
        { from: [{ ipBlock: { cidr: `${net.hostIp}/32` } }], ports: [{ port: 8080, protocol: "TCP" }] },
      ],
    });
    await expectReach([
      [client, "pod", true],
      [client, "service", true],
      [other, "pod", false],
      [other, "service", false],
    ]);
    expect(await fromNode(traefikUid)).toBe(true);
    await removePolicy("allow-clients");
    await removePolicy("default-deny");
  });

  it("refuses a pod's connections once a default-deny egress policy selects it", async () => {
    await expectReach([[client, "pod", true]]);
    await policy("client-egress-deny", {
      podSelector: { matchLabels: { role: "client" } },
      policyTypes: ["Egress"],
    });
    await expectReach([
      [client, "pod", false],
      [client, "service", false],
      [other, "pod", true],
    ]);
    await removePolicy("client-egress-deny");
    await expectReach([[client, "service", true]]);
  });
});
