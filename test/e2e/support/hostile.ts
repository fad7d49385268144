// What the hostile-tenant suite (test/e2e/hostile-tenant.test.ts) stands on: two tenant namespaces
// whose users are bound to an editor Role on the five kinds that cannot read Secrets (the tests act
// as them by impersonation, as `kubectl --as` does), requests through the ingress with a path sent
// exactly as written, and the ledger that prints each attempt with what was expected and seen.
import { request } from "node:https";
import { KubeApiError } from "@capstan/shared/kube";
import { expect, inject } from "vitest";
import type { TestKube } from "../../ground/kube-client.ts";
import { grant, impersonating } from "../../operator/rbac-kit.ts";
import { apply, condition, eventually, get, type Obj } from "./kube.ts";
import { INGRESS_HOST } from "./platform.ts";

export const CR = "capstan.dev/v1alpha1";
export const TENANT_A = "tenant-a";
export const TENANT_B = "tenant-b";
/** A Secret of tenant-a that its editors may not read: what the confused deputy would deliver. */
export const GUARDED_SECRET = "db-password";
export const GUARDED_VALUE = "hunter2-do-not-leak-7f3a";
/** A Secret of tenant-a its editors may read (their own provider key or search key). */
export const TEAM_SECRET = "team-key";
export const TEAM_VALUE = "team-chosen-search-key-2026";

export interface Tenant {
  ns: string;
  /** The tenant's editor (impersonated): every verb on the five kinds, `get` on TEAM_SECRET only. */
  editor: TestKube;
  user: string;
}

/** The editor Role a platform team gives a tenant: the five kinds, and one Secret it may read. */
const editorRules = [
  {
    apiGroups: ["capstan.dev"],
    resources: ["agents", "accesschannels", "searchkeys", "knowledgebases", "scrapers"],
    verbs: ["*"],
  },
  { apiGroups: [""], resources: ["secrets"], resourceNames: [TEAM_SECRET], verbs: ["get"] },
];

const secret = (ns: string, name: string, value: string): Obj =>
  ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: ns },
    data: { value: Buffer.from(value).toString("base64") },
  }) as Obj;

/** A tenant namespace with its two Secrets and its editor user bound to the editor Role. */
export async function tenant(admin: TestKube, ns: string, user: string): Promise<Tenant> {
  await apply(admin, { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
  await apply(admin, secret(ns, GUARDED_SECRET, GUARDED_VALUE));
  await apply(admin, secret(ns, TEAM_SECRET, TEAM_VALUE));
  const subjects = [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: user }];
  await grant(admin, ns, "capstan-editor", editorRules, subjects).catch((err: Error) => {
    // A second run on the same cluster: the Role and its binding are already what they should be.
    if (!/already exists/.test(err.message)) throw err;
  });
  return { ns, user, editor: impersonating(admin, user, ns) };
}

/** Waits until a resource is Ready=True and returns it; a timeout names the conditions last seen. */
export async function ready(kube: TestKube, kind: string, name: string, ns: string, timeoutMs = 240_000) {
  let last: unknown;
  try {
    return await eventually(
      `${kind} ${ns}/${name} Ready`,
      async () => {
        const o = await get(kube, kind, CR, name, ns);
        last = o?.status?.conditions;
        return condition(o, "Ready")?.status === "True" ? o : undefined;
      },
      timeoutMs,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; conditions: ${JSON.stringify(last)}`);
  }
}

export interface Reply {
  status: number;
  body: string;
}

/** One HTTPS request through the ingress with its path sent verbatim (no dot-segment or escape folding). */
export function viaIngress(
  ca: string,
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Reply> {
  const url = new URL(inject("e2eIngressHttps"));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port || 443,
        servername: INGRESS_HOST,
        ca,
        method: opts.method ?? "GET",
        path,
        headers: {
          host: INGRESS_HOST,
          ...(opts.body !== undefined ? { "content-type": "application/json" } : {}),
          ...opts.headers,
        },
        timeout: 60_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`${opts.method ?? "GET"} ${path}: no answer in 60 s`)));
    req.on("error", reject);
    req.end(opts.body);
  });
}

export interface Row {
  attempt: string;
  expected: string;
  seen: string;
  held: boolean;
}

/** The attempts in the order they ran, printed as the Markdown table docs/security.md carries. */
export class Ledger {
  readonly rows: Row[] = [];

  /** Records an attempt and fails the running test unless `held` (what was seen is what was expected). */
  held(attempt: string, expected: string, seen: string, held: boolean): void {
    this.rows.push({ attempt, expected, seen: seen.replaceAll("|", "\\|").replaceAll("\n", " "), held });
    expect(held, `${attempt}: expected ${expected}, saw ${seen}`).toBe(true);
  }

  table(): string {
    const lines = ["| # | attempt | expected | seen | held |", "|---|---|---|---|---|"];
    this.rows.forEach((r, i) => {
      lines.push(`| ${i + 1} | ${r.attempt} | ${r.expected} | ${r.seen} | ${r.held ? "yes" : "**NO**"} |`);
    });
    return lines.join("\n");
  }
}

/** A short, single-line account of an HTTP answer for the ledger. */
export function brief(r: { status?: number; body?: string; error?: string }, bodyChars = 90): string {
  if (r.error) return `no connection (${r.error})`;
  const body = (r.body ?? "").replace(/\s+/g, " ").trim();
  return `${r.status} ${body.length > bodyChars ? `${body.slice(0, bodyChars)}…` : body}`;
}

/** The API server's answer to a write: status 200 "ok", or the status and message of its refusal. */
export async function write(p: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await p;
    return { status: 200, message: "ok" };
  } catch (err) {
    if (err instanceof KubeApiError) return { status: err.status, message: err.message };
    throw err;
  }
}

/** A create of one of the five kinds, as `client`. */
export const create = (client: TestKube, o: Obj) =>
  write(
    client.json(`/apis/capstan.dev/v1alpha1/namespaces/${o.metadata.namespace}/${o.kind.toLowerCase()}s`, {
      method: "POST",
      body: o,
    }),
  );

export const obj = (kind: string, name: string, ns: string, spec: Record<string, unknown>): Obj => ({
  apiVersion: CR,
  kind,
  metadata: { name, namespace: ns },
  spec,
});

/** A refusal by the chart's reference policy that does not echo the Secret's value. */
export const refusedByPolicy = (r: { status: number; message: string }) =>
  r.status === 403 && r.message.includes("may not get") && !r.message.includes(GUARDED_VALUE);

/** Chat and search through the ingress, as a tenant's client sends them. */
export function clients(ca: string) {
  const post = (path: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
    viaIngress(ca, path, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  return {
    chat: (key: string, body: unknown = { model: "m", messages: [{ role: "user", content: "hello" }] }) =>
      post("/api/v1/chat/completions", key, body),
    search: (key: string, body: unknown, headers: Record<string, string> = {}) =>
      post("/v1/rag/search", key, body, headers),
  };
}
