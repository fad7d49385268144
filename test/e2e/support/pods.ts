// Pods a test runs inside the e2e cluster to act as a workload would: Debian's static busybox
// (built with the node's binaries: sh, httpd, nc, wget) in a namespace the test creates, and
// commands run in them through the API server as `kubectl exec` does. A request made from such a
// pod is what any pod of the cluster could send, so the tests of who may reach what (the node's
// NetworkPolicies, forged headers, another tenant's services) are written with these helpers.
import { PassThrough } from "node:stream";
import { KubeApiError } from "@capstan/shared/kube";
import { Exec, type V1Status } from "@kubernetes/client-node";
import type { TestKube } from "../../ground/kube-client.ts";
import { nodeBinaries } from "../../ground/node-binaries.ts";
import { eventually } from "./kube.ts";

/** Creates a namespace (with labels) and waits for its default ServiceAccount, which pods need. */
export async function createNamespace(kube: TestKube, name: string, labels: Record<string, string> = {}) {
  await kube.json("/api/v1/namespaces", {
    method: "POST",
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name, labels } },
  });
  await eventually(
    `ServiceAccount ${name}/default`,
    () => kube.json(`/api/v1/namespaces/${name}/serviceaccounts/default`).then(() => true),
    30_000,
    200,
  );
}

/** Deletes a namespace; absent is fine. */
export async function deleteNamespace(kube: TestKube, name: string): Promise<void> {
  try {
    await kube.json(`/api/v1/namespaces/${name}`, { method: "DELETE" });
  } catch (err) {
    if (!(err instanceof KubeApiError) || err.status !== 404) throw err;
  }
}

export interface BusyboxPod {
  namespace: string;
  name: string;
  ip: string;
}

/**
 * A busybox pod running `script` (by default it only waits, to run commands in with execIn), up
 * until Running with an address. `port`: it serves HTTP there (`httpd`) with a page naming the
 * pod, and is Ready only once that answers.
 */
export async function startBusybox(
  kube: TestKube,
  namespace: string,
  name: string,
  opts: { labels?: Record<string, string>; script?: string; port?: number } = {},
): Promise<BusyboxPod> {
  const serve = opts.port
    ? `mkdir -p /www && echo 'pod ${name}' > /www/index.html && exec httpd -f -p ${opts.port} -h /www`
    : undefined;
  const script = opts.script ?? serve ?? "exec sleep 86400";
  await kube.json(`/api/v1/namespaces/${namespace}/pods`, {
    method: "POST",
    body: {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, labels: opts.labels ?? {} },
      spec: {
        terminationGracePeriodSeconds: 0,
        automountServiceAccountToken: false,
        containers: [
          {
            name: "main",
            image: nodeBinaries().busyboxImage,
            imagePullPolicy: "Never",
            command: ["/bin/sh", "-c", script],
            ...(opts.port ? { readinessProbe: { tcpSocket: { port: opts.port }, periodSeconds: 1 } } : {}),
          },
        ],
      },
    },
  });
  return eventually(
    `pod ${namespace}/${name} running`,
    async () => {
      const p = await kube.json<{
        status?: { phase?: string; podIP?: string; conditions?: { type: string; status: string }[] };
      }>(`/api/v1/namespaces/${namespace}/pods/${name}`);
      const ready = p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
      return p.status?.phase === "Running" && p.status.podIP && ready
        ? { namespace, name, ip: p.status.podIP }
        : undefined;
    },
    90_000,
    250,
  );
}

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command in a pod's first container through the API server (exec), bounded by timeoutMs. */
export async function execIn(
  kube: TestKube,
  pod: Pick<BusyboxPod, "namespace" | "name">,
  command: string[],
  timeoutMs = 30_000,
): Promise<ExecResult> {
  const out = new PassThrough();
  const err = new PassThrough();
  const chunks = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  out.on("data", (c: Buffer) => chunks.stdout.push(c));
  err.on("data", (c: Buffer) => chunks.stderr.push(c));
  let socket: { close(): void } | undefined;
  const code = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      socket?.close();
      reject(new Error(`exec in ${pod.namespace}/${pod.name} did not end in ${timeoutMs} ms: ${command.join(" ")}`));
    }, timeoutMs);
    const done = (status: V1Status) => {
      clearTimeout(timer);
      if (status.status === "Success") return resolve(0);
      const exit = status.details?.causes?.find((c) => c.reason === "ExitCode")?.message;
      if (exit !== undefined) return resolve(Number(exit));
      reject(new Error(`exec in ${pod.namespace}/${pod.name} failed: ${status.message ?? JSON.stringify(status)}`));
    };
    new Exec(kube.kubeConfig)
      .exec(pod.namespace, pod.name, "main", command, out, err, null, false, done)
      .then((ws) => {
        socket = ws;
      })
      .catch((e: unknown) => {
        clearTimeout(timer);
        reject(e);
      });
  });
  // The status arrives before the last output frame is flushed on some servers: give it a tick.
  await new Promise((r) => setImmediate(r));
  return { code, stdout: Buffer.concat(chunks.stdout).toString(), stderr: Buffer.concat(chunks.stderr).toString() };
}

export interface PodHttpAnswer {
  /** false: no connection within the timeout (refused, dropped by a NetworkPolicy, nothing there). */
  connected: boolean;
  status?: number;
  /** The body of a 2xx answer (busybox wget keeps no other); what wget said otherwise. */
  body: string;
}

/**
 * One HTTP request sent from inside a pod with busybox wget (any header the pod likes, such as a
 * forged X-Forwarded-For), bounded by `timeoutS`. A connection a NetworkPolicy drops gets no
 * answer. (Not nc: it half-closes the connection once the request is sent, and a Node server then
 * drops a request it has not answered yet.)
 */
export async function httpFromPod(
  kube: TestKube,
  pod: Pick<BusyboxPod, "namespace" | "name">,
  url: string,
  req: { headers?: Record<string, string>; body?: string; timeoutS?: number } = {},
): Promise<PodHttpAnswer> {
  const timeoutS = req.timeoutS ?? 5;
  // An argv, no shell: nothing in a header or the body needs quoting. `timeout` bounds it (this
  // static busybox's wget crashes on its own -T); -S prints the answer's status line.
  const command = ["/bin/timeout", String(timeoutS), "/bin/wget", "-S", "-O", "-"];
  for (const [k, v] of Object.entries(req.headers ?? {})) command.push("--header", `${k}: ${v}`);
  if (req.body !== undefined) command.push("--post-data", req.body);
  const res = await execIn(kube, pod, [...command, url], (timeoutS + 20) * 1000);
  const m = /HTTP\/1\.[01] (\d{3})/.exec(res.stderr);
  if (!m) return { connected: false, body: res.stderr.trim() };
  return { connected: true, status: Number(m[1]), body: res.code === 0 ? res.stdout : res.stderr.trim() };
}
