// The faults test/e2e/monitoring.test.ts puts on the platform, and how it watches an alert go
// through them: a Deployment scaled (Redis, Qdrant: the chart's, which nothing scales back), the
// node cordoned while pods are deleted (the operator would recreate the gateway's at once), the
// operator's Lease held by a holder that is not running, and an alert's state read from
// Prometheus's API until it fires and until it is gone.
import type { TestKube } from "../../ground/kube-client.ts";
import { eventually, get, list, mergePatch, type Obj } from "./kube.ts";
import type { Alert, MonitoringStack } from "./monitoring-stack.ts";

/** Scales a Deployment the chart owns (helm sets replicas again only on the next upgrade). */
export async function scale(kube: TestKube, namespace: string, name: string, replicas: number): Promise<void> {
  const ref = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name, namespace } } as Obj;
  await mergePatch(kube, ref, { spec: { replicas } });
}

/** Marks the node (un)schedulable: pods deleted meanwhile are recreated but stay Pending. */
export async function cordon(kube: TestKube, unschedulable: boolean): Promise<void> {
  for (const node of await list(kube, "Node", "v1")) {
    await mergePatch(kube, { apiVersion: "v1", kind: "Node", metadata: { name: node.metadata.name } } as Obj, {
      spec: { unschedulable },
    });
  }
}

/** Deletes pods at once (grace period 0), as a node that dies takes them. */
export async function killPods(kube: TestKube, namespace: string, selector: string): Promise<number> {
  const pods = await list(kube, "Pod", "v1", namespace, selector);
  for (const p of pods)
    await kube.json(`/api/v1/namespaces/${namespace}/pods/${p.metadata.name}`, {
      method: "DELETE",
      body: { kind: "DeleteOptions", apiVersion: "v1", gracePeriodSeconds: 0 },
    });
  return pods.length;
}

/** No pod of the selector exists any more (deleted ones gone, new ones not scheduled). */
export async function noRunningPods(kube: TestKube, namespace: string, selector: string): Promise<void> {
  await eventually(`no running pod for ${selector}`, async () => {
    const pods = await list(kube, "Pod", "v1", namespace, selector);
    return pods.every((p) => p.status?.phase === "Pending" && !p.spec?.nodeName) ? true : undefined;
  });
}

/**
 * Holds a coordination.k8s.io Lease for `holder`, renewing it every second as a live leader
 * would, until the returned function is called: the replicas see a leader that is not one of them.
 */
export function holdLease(kube: TestKube, namespace: string, name: string, holder: string): () => Promise<void> {
  const ref = { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name, namespace } } as Obj;
  let stopped = false;
  const renew = async () => {
    const now = new Date().toISOString().replace("Z", "000Z"); // MicroTime: microseconds
    await mergePatch(kube, ref, { spec: { holderIdentity: holder, renewTime: now, acquireTime: now } });
  };
  const loop = (async () => {
    while (!stopped) {
      await renew().catch(() => undefined);
      await new Promise((r) => setTimeout(r, 1_000));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
  };
}

/** The holder the Lease names now. */
export async function leaseHolder(kube: TestKube, namespace: string, name: string): Promise<string | undefined> {
  const lease = await get(kube, "Lease", "coordination.k8s.io/v1", name, namespace);
  return lease?.spec?.holderIdentity as string | undefined;
}

export type AlertMatch = { alertname: string } & Record<string, string>;

const matches = (a: Alert, m: AlertMatch) => Object.entries(m).every(([k, v]) => a.labels[k] === v);

/** Waits until the alert is firing; returns it with the seconds since `since` (Unix ms). */
export async function firing(stack: MonitoringStack, m: AlertMatch, since: number, timeoutMs: number) {
  const alert = await eventually(
    `${m.alertname} firing`,
    async () => (await stack.alerts()).find((a) => matches(a, m) && a.state === "firing"),
    timeoutMs,
  );
  return { alert, afterSeconds: (Date.now() - since) / 1000 };
}

/** Waits until no alert matches (neither pending nor firing); the seconds since `since`. */
export async function resolved(stack: MonitoringStack, m: AlertMatch, since: number, timeoutMs: number) {
  await eventually(
    `${m.alertname} resolved`,
    async () => ((await stack.alerts()).some((a) => matches(a, m)) ? undefined : true),
    timeoutMs,
  );
  return (Date.now() - since) / 1000;
}

/**
 * Starts `work` every `everyMs`, with at most `inFlight` calls running (1: one after the other),
 * until the returned stop function is called; each result kept with how long the call took.
 */
export function keepCalling<T>(
  work: () => Promise<T>,
  everyMs: number,
  inFlight = 1,
): { results: { value: T; ms: number }[]; stop: () => Promise<void> } {
  const results: { value: T; ms: number }[] = [];
  const running = new Set<Promise<void>>();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      if (running.size < inFlight) {
        const started = Date.now();
        const call: Promise<void> = work().then((value) => {
          results.push({ value, ms: Date.now() - started });
          running.delete(call);
        });
        running.add(call);
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
    await Promise.all(running);
  })();
  return {
    results,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

/** What Prometheus holds for some expressions, one line each (for a failure's message). */
export async function explain(stack: MonitoringStack, exprs: string[]): Promise<string> {
  const lines: string[] = [];
  for (const e of exprs) {
    const result = await stack.query(e).catch((err: Error) => err.message);
    lines.push(`${e} => ${JSON.stringify(result)}`);
  }
  return lines.join("\n");
}
