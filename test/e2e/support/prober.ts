// A pod that tries things from inside a tenant's namespace, on the test's behalf: the test asks it
// (over HTTP, at the pod's own address on the node's bridge) to open a TCP connection or send one
// HTTP request with its path exactly as written, and reads back what it saw. Every other request
// that reaches the pod is recorded, so it doubles as a listener a tenant points things at
// (GET /seen lists them). It runs Node from the operator image, as the pages of workloads.ts do,
// pulled from the node's registry with a pull Secret the prober's namespace gets.
import { request } from "node:http";
import type { TestKube } from "../../ground/kube-client.ts";
import { apply, eventually, get, type Obj } from "./kube.ts";
import { PULL_SECRET, pullSecret } from "./release.ts";

/** What a request from inside the pod came to: an HTTP answer, or no connection at all. */
export interface Seen {
  status?: number;
  body?: string;
  /** The connection error (ETIMEDOUT, ECONNREFUSED, ...) when no answer came. */
  error?: string;
}

export interface HttpTry {
  host: string;
  port: number;
  /** Sent verbatim: no normalisation of dot segments or escapes. */
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs?: number;
}

export interface TcpTry {
  host: string;
  port: number;
  /** Written once the connection is open; the first bytes of the answer are returned. */
  send?: string;
  timeoutMs?: number;
}

export interface Prober {
  ip: string;
  http(t: HttpTry): Promise<Seen>;
  tcp(t: TcpTry): Promise<{ connected: boolean; data?: string; error?: string }>;
  /** The requests that reached the pod other than the test's own orders. */
  seen(): Promise<{ method: string; url: string; authorization: string | null }[]>;
}

// The pod's program. No dependency: node:http and node:net only.
const SCRIPT = `
const http = require("node:http"), net = require("node:net");
const seen = [];
const readBody = async (q) => { const c = []; for await (const x of q) c.push(x); return Buffer.concat(c).toString(); };
function tryHttp(o) {
  return new Promise((resolve) => {
    const req = http.request({ host: o.host, port: o.port, path: o.path, method: o.method || "GET",
      headers: o.headers || {}, timeout: o.timeoutMs || 4000 }, (res) => {
      const c = []; res.on("data", (x) => c.push(x));
      res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(c).toString().slice(0, 4000) }));
      res.on("error", (e) => resolve({ error: e.code || e.message }));
    });
    req.on("timeout", () => req.destroy(Object.assign(new Error("timeout"), { code: "ETIMEDOUT" })));
    req.on("error", (e) => resolve({ error: e.code || e.message }));
    req.end(o.body);
  });
}
function tryTcp(o) {
  return new Promise((resolve) => {
    const s = net.connect({ host: o.host, port: o.port });
    let connected = false, data = "";
    const done = (r) => { s.destroy(); resolve(r); };
    const timer = setTimeout(() => done(connected ? { connected, data } : { connected, error: "ETIMEDOUT" }), o.timeoutMs || 4000);
    s.on("connect", () => { connected = true; if (o.send) s.write(o.send); else { clearTimeout(timer); done({ connected }); } });
    s.on("data", (x) => { data += x.toString(); clearTimeout(timer); done({ connected, data: data.slice(0, 400) }); });
    s.on("error", (e) => { clearTimeout(timer); done({ connected, error: e.code || e.message }); });
  });
}
http.createServer(async (q, r) => {
  const body = await readBody(q);
  r.setHeader("content-type", "application/json");
  if (q.url === "/probe/http") return r.end(JSON.stringify(await tryHttp(JSON.parse(body))));
  if (q.url === "/probe/tcp") return r.end(JSON.stringify(await tryTcp(JSON.parse(body))));
  if (q.url === "/probe/seen") return r.end(JSON.stringify(seen));
  if (q.url === "/probe/ready") return r.end("{}");
  seen.push({ method: q.method, url: q.url, authorization: q.headers.authorization || null });
  r.end(JSON.stringify({ id: "x", object: "chat.completion", choices: [] }));
}).listen(8080);
`;

/** Orders the prober over the node's bridge: the test runs on the node, so the pod IP is reachable. */
function order<T>(ip: string, path: string, body?: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: ip, port: 8080, path, method: "POST", headers: { "content-type": "application/json" }, timeout: 30_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")) as T));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`prober ${ip}${path}: no answer in 30 s`)));
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** Starts (or finds) the prober pod `name` in `namespace` and returns it once it answers. */
export async function startProber(kube: TestKube, namespace: string, name: string, image: string): Promise<Prober> {
  const labels = { "app.kubernetes.io/name": name };
  await apply(kube, pullSecret(namespace) as Obj);
  await apply(kube, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace, labels },
    spec: {
      automountServiceAccountToken: false,
      securityContext: { runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001 },
      imagePullSecrets: [{ name: PULL_SECRET }],
      containers: [
        {
          name: "prober",
          image,
          imagePullPolicy: "IfNotPresent",
          command: ["node", "-e", SCRIPT],
          ports: [{ name: "http", containerPort: 8080 }],
          readinessProbe: { httpGet: { path: "/probe/ready", port: "http" }, periodSeconds: 1 },
          securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false },
        },
      ],
    },
  });
  const ip = await eventually(
    `prober ${namespace}/${name} Ready`,
    async () => {
      const pod = await get(kube, "Pod", "v1", name, namespace);
      const status = pod?.status as { podIP?: string; conditions?: { type: string; status: string }[] } | undefined;
      const ready = status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
      return ready && status?.podIP ? status.podIP : undefined;
    },
    120_000,
  );
  return {
    ip,
    http: (t) => order<Seen>(ip, "/probe/http", t),
    tcp: (t) => order(ip, "/probe/tcp", t),
    seen: () => order(ip, "/probe/seen", {}),
  };
}
