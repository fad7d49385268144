// The benchmark's own client of the API server: plain undici over one pooled agent with the admin
// client certificate of the test ground, so the driver that creates the objects is the same code
// in both arms of the A/B and uses neither Kubernetes layer under test. It also checks the
// operator's work on the API server's own view (expectChannelsDone).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { allCrds } from "@capstan/shared/api";
import { Agent, fetch } from "undici";
import { expectCount } from "../work.ts";

export class DriverError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export class Driver {
  private readonly server: string;
  private readonly agent: Agent;

  /** `dir` holds the test ground's ca.crt, admin.crt and admin.key. */
  constructor(server: string, dir: string) {
    this.server = server;
    this.agent = new Agent({
      connect: {
        ca: readFileSync(join(dir, "ca.crt")),
        cert: readFileSync(join(dir, "admin.crt")),
        key: readFileSync(join(dir, "admin.key")),
      },
      keepAliveTimeout: 30_000,
      connections: 64,
    });
  }

  async json<T = unknown>(
    path: string,
    req: { method?: string; body?: unknown; contentType?: string; timeoutMs?: number } = {},
  ): Promise<T> {
    const res = await fetch(this.server + path, {
      method: req.method ?? "GET",
      headers: {
        accept: "application/json",
        ...(req.body !== undefined ? { "content-type": req.contentType ?? "application/json" } : {}),
      },
      ...(req.body !== undefined ? { body: JSON.stringify(req.body) } : {}),
      dispatcher: this.agent,
      signal: AbortSignal.timeout(req.timeoutMs ?? 60_000),
    });
    const text = await res.text();
    if (res.status >= 400)
      throw new DriverError(res.status, `${req.method ?? "GET"} ${path}: ${res.status} ${text.slice(0, 200)}`);
    return (text ? JSON.parse(text) : {}) as T;
  }

  /** Every item of a list (paged, 500 at a time), e.g. to count what the operator made. */
  async list<T = unknown>(path: string): Promise<T[]> {
    const items: T[] = [];
    let token = "";
    do {
      const sep = path.includes("?") ? "&" : "?";
      const page = await this.json<{ items: T[]; metadata?: { continue?: string } }>(
        `${path}${sep}limit=500${token ? `&continue=${encodeURIComponent(token)}` : ""}`,
      );
      items.push(...page.items);
      token = page.metadata?.continue ?? "";
    } while (token);
    return items;
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

interface Condition {
  type: string;
  status: string;
}

/**
 * What the API server holds in `ns` (not what the operator says it did): AccessChannels, those
 * Ready with a key hash in status, and the key Secrets owned by AccessChannels.
 */
async function onServer(client: Driver, ns: string): Promise<{ channels: number; ready: number; keySecrets: number }> {
  const channels = await client.list<{ status?: { keyHash?: string; conditions?: Condition[] } }>(
    `/apis/capstan.dev/v1alpha1/namespaces/${ns}/accesschannels`,
  );
  const secrets = await client.list(
    `/api/v1/namespaces/${ns}/secrets?labelSelector=${encodeURIComponent("capstan.dev/owner-kind=AccessChannel")}`,
  );
  const ready = channels.filter(
    (c) => c.status?.keyHash && c.status.conditions?.some((k) => k.type === "Ready" && k.status === "True"),
  ).length;
  return { channels: channels.length, ready, keySecrets: secrets.length };
}

/**
 * Stops the benchmark (MissingWorkError) unless the API server holds `expected` AccessChannels,
 * each Ready with a key hash and its key Secret, and the operator counted as many Ready.
 */
export async function expectChannelsDone(
  client: Driver,
  ns: string,
  phase: string,
  expected: number,
  operatorReady: number,
): Promise<void> {
  const seen = await onServer(client, ns);
  expectCount(`${phase} AccessChannels on the API server`, seen.channels, expected);
  expectCount(`${phase} AccessChannels Ready with a key hash on the API server`, seen.ready, expected);
  expectCount(`${phase} key Secrets of AccessChannels on the API server`, seen.keySecrets, expected);
  expectCount(`${phase} AccessChannels Ready in the operator's cache`, operatorReady, expected);
}

/** Creates the five CRDs and waits (60 s at most each) until the API server serves them. */
export async function installCrds(client: Driver): Promise<void> {
  const base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  for (const { crd } of allCrds()) await client.json(base, { method: "POST", body: crd });
  for (const { crd } of allCrds()) {
    const name = (crd.metadata as { name: string }).name;
    const deadline = Date.now() + 60_000;
    for (;;) {
      const got = await client.json<{ status?: { conditions?: Condition[] } }>(`${base}/${name}`);
      if (got.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} not Established after 60 s`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** The namespace the benchmark's AccessChannels live in, with the Agent they all name ("agent"). */
export async function seedNamespace(client: Driver, ns: string): Promise<void> {
  await client.json("/api/v1/namespaces", {
    method: "POST",
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } },
  });
  await client.json(`/apis/capstan.dev/v1alpha1/namespaces/${ns}/agents`, {
    method: "POST",
    body: {
      apiVersion: "capstan.dev/v1alpha1",
      kind: "Agent",
      metadata: { name: "agent", namespace: ns },
      spec: { provider: { baseURL: "https://llm.example/v1", model: "m" } },
    },
  });
}
