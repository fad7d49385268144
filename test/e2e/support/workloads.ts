// Objects the e2e tests add beside examples/: a page served inside the cluster (for the scraper
// and a KnowledgeBase), extra channels and keys, and a look at the processes a pod really runs.
import { readdirSync, readFileSync } from "node:fs";
import type { TestKube } from "../../ground/kube-client.ts";
import { apply, deploymentReady, eventually, get, type Obj } from "./kube.ts";
import { DEMO_NS } from "./platform.ts";
import { PULL_SECRET } from "./release.ts";

export const PAGE_NAME = "capstan-e2e-page";
/** A sentence no model or example knows, so finding it proves the page went through the pipeline. */
export const PAGE_FACT = "The orchard lighthouse protocol rotates every signing key at each full moon.";
export const PAGE_URL = `http://${PAGE_NAME}.${DEMO_NS}.svc.cluster.local/guide`;

const PAGE_HTML = `<!doctype html><html><head><title>Cluster guide</title></head><body><main>
<h1>Capstan cluster guide</h1><p>${PAGE_FACT}</p>
<p>Lighthouse keepers file their reports in the harbour ledger every evening.</p></main></body></html>`;

/**
 * A tiny web server pod (Node from the operator image, pulled from the node's registry with the
 * namespace's pull Secret: the kubelet lets no pod without those credentials use an image pulled
 * with them, even one already on the node) and its Service.
 */
export async function servePage(kube: TestKube, nodeImage: string): Promise<void> {
  const script = `require("http").createServer((q, r) => { r.setHeader("content-type", "text/html; charset=utf-8"); r.end(${JSON.stringify(PAGE_HTML)}); }).listen(8080);`;
  const labels = { "app.kubernetes.io/name": PAGE_NAME };
  await apply(kube, {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: PAGE_NAME, namespace: DEMO_NS, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          automountServiceAccountToken: false,
          securityContext: { runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001 },
          imagePullSecrets: [{ name: PULL_SECRET }],
          containers: [
            {
              name: "page",
              image: nodeImage,
              imagePullPolicy: "IfNotPresent",
              command: ["node", "-e", script],
              ports: [{ name: "http", containerPort: 8080 }],
              readinessProbe: { httpGet: { path: "/guide", port: "http" }, periodSeconds: 1 },
              securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false },
            },
          ],
        },
      },
    },
  });
  await apply(kube, {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: PAGE_NAME, namespace: DEMO_NS },
    spec: { selector: labels, ports: [{ name: "http", port: 80, targetPort: "http" }] },
  });
  await deploymentReady(kube, DEMO_NS, PAGE_NAME, 120_000);
}

/** An AccessChannel (and the example Agent) with its own QPM; waits until its key is issued. */
export async function channel(kube: TestKube, name: string, qpm: number): Promise<Obj> {
  await apply(kube, {
    apiVersion: "capstan.dev/v1alpha1",
    kind: "AccessChannel",
    metadata: { name, namespace: DEMO_NS },
    spec: { channelName: `e2e ${name}`, agentRef: { name: "support-assistant" }, qpm },
  });
  return eventually(`AccessChannel ${name} Ready`, async () => {
    const c = await get(kube, "AccessChannel", "capstan.dev/v1alpha1", name, DEMO_NS);
    const ready = (c?.status?.conditions as { type: string; status: string }[] | undefined)?.find(
      (x) => x.type === "Ready",
    );
    return ready?.status === "True" && c?.status?.secretName ? c : undefined;
  });
}

export interface PodProcess {
  pid: number;
  uid: number;
  rootReadOnly: boolean;
  command: string;
  rssKiB: number;
}

function rssOf(pid: string): number {
  return Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
}

/** Whether a process has a shared library whose file name contains `name` mapped (e.g. a preloaded malloc). */
export function mapsLibrary(pid: number, name: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/maps`, "utf8").includes(name);
  } catch {
    return false;
  }
}

/** Resident memory of the node's own processes (control plane, kubelet, runtime, DNS, ingress). */
export function nodeDaemonsRssKiB(): number {
  const names = /^(etcd|kube-apiserver|kube-controller|kube-scheduler|kubelet|kube-proxy|containerd|coredns|traefik)/;
  let total = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (names.test(readFileSync(`/proc/${entry}/comm`, "utf8").trim())) total += rssOf(entry);
    } catch {
      // the process ended while being read
    }
  }
  return total;
}

/**
 * The processes a running pod's containers really run, read from this machine's /proc (the node is
 * this machine): the pod's cgroup path holds its UID. The pause (sandbox) process is left out.
 */
export function podProcesses(podUid: string): PodProcess[] {
  const needle = `pod${podUid}`;
  const needleSystemd = `pod${podUid.replaceAll("-", "_")}`;
  const out: PodProcess[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cgroup = readFileSync(`/proc/${entry}/cgroup`, "utf8");
      if (!cgroup.includes(needle) && !cgroup.includes(needleSystemd)) continue;
      const command = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ").trim();
      if (command === "/pause" || command.endsWith("/pause")) continue;
      const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${entry}/status`, "utf8"))?.[1]);
      // mountinfo: "id parent major:minor root mountpoint options ..." — the line whose mount point is "/".
      const rootLine = readFileSync(`/proc/${entry}/mountinfo`, "utf8")
        .split("\n")
        .find((l) => l.split(" ")[4] === "/");
      const options = rootLine?.split(" ")[5] ?? "";
      const rootReadOnly = options.split(",").includes("ro");
      out.push({ pid: Number(entry), uid, rootReadOnly, command, rssKiB: rssOf(entry) });
    } catch {
      // the process ended while being read
    }
  }
  return out;
}
