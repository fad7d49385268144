// What a signed-in user does, done with THEIR token against the API server (pass-through): RBAC
// decides every read and write, the console itself has no rights. One pooled connection per session.
import { createRegistry } from "@capstan/shared";
import { KubeConfig, KubeHttp, type Meta } from "@capstan/shared/kube";
import type { SessionUser } from "./sessions.ts";

export const CAP = "/apis/capstan.dev/v1alpha1";

/** An object as the console reads it: the shared metadata, and spec, status or data as JSON. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: Meta;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  data?: Record<string, string>;
}

export interface ResourceRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
}

/** A Kubernetes client acting as one user: the base config's cluster and CA, the user's bearer token. */
export function kubeAsUser(base: KubeConfig, token: string): KubeHttp {
  const cluster = base.getCurrentCluster();
  if (!cluster) throw new Error("kubeconfig: no current cluster");
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: "console-user", token }],
    contexts: [{ name: "console", cluster: cluster.name, user: "console-user" }],
    currentContext: "console",
  });
  // Per-session metrics would be noise (and a label per user): this registry is never exported.
  return new KubeHttp(kc, createRegistry({ defaultMetrics: false }), { timeoutMs: 15_000 });
}

const enc = encodeURIComponent;

export class UserApi {
  readonly kube: KubeHttp;
  constructor(kube: KubeHttp) {
    this.kube = kube;
  }

  /** Who the token belongs to, as the API server authenticates it (SelfSubjectReview). */
  async whoAmI(): Promise<SessionUser> {
    const r = await this.kube.json<{ status?: { userInfo?: { username?: string; groups?: string[] } } }>(
      "/apis/authentication.k8s.io/v1/selfsubjectreviews",
      { method: "POST", body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" } },
    );
    const info = r.status?.userInfo ?? {};
    return { username: info.username ?? "(unknown)", groups: info.groups ?? [] };
  }

  /** The user's rules in a namespace (SelfSubjectRulesReview), to hide what they may not do. */
  async rules(namespace: string): Promise<ResourceRule[]> {
    const r = await this.kube.json<{ status?: { resourceRules?: ResourceRule[] } }>(
      "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
      {
        method: "POST",
        body: { apiVersion: "authorization.k8s.io/v1", kind: "SelfSubjectRulesReview", spec: { namespace } },
      },
    );
    return r.status?.resourceRules ?? [];
  }

  list(plural: string, ns: string): Promise<{ items: KubeObject[] }> {
    return this.kube.json(`${CAP}/namespaces/${enc(ns)}/${plural}`);
  }

  get(plural: string, ns: string, name: string): Promise<KubeObject> {
    return this.kube.json(`${CAP}/namespaces/${enc(ns)}/${plural}/${enc(name)}`);
  }

  create(plural: string, ns: string, body: KubeObject): Promise<KubeObject> {
    return this.kube.json(`${CAP}/namespaces/${enc(ns)}/${plural}`, { method: "POST", body });
  }

  /** A JSON merge patch (RFC 7386): null removes a field. */
  patch(plural: string, ns: string, name: string, body: unknown): Promise<KubeObject> {
    return this.kube.json(`${CAP}/namespaces/${enc(ns)}/${plural}/${enc(name)}`, {
      method: "PATCH",
      contentType: "application/merge-patch+json",
      body,
    });
  }

  async remove(plural: string, ns: string, name: string): Promise<void> {
    await this.kube.json(`${CAP}/namespaces/${enc(ns)}/${plural}/${enc(name)}`, { method: "DELETE" });
  }

  getSecret(ns: string, name: string): Promise<KubeObject> {
    return this.kube.json(`/api/v1/namespaces/${enc(ns)}/secrets/${enc(name)}`);
  }

  async deleteSecret(ns: string, name: string): Promise<void> {
    await this.kube.json(`/api/v1/namespaces/${enc(ns)}/secrets/${enc(name)}`, { method: "DELETE" });
  }

  createConfigMap(ns: string, body: KubeObject): Promise<KubeObject> {
    return this.kube.json(`/api/v1/namespaces/${enc(ns)}/configmaps`, { method: "POST", body });
  }

  replaceConfigMap(ns: string, name: string, body: KubeObject): Promise<KubeObject> {
    return this.kube.json(`/api/v1/namespaces/${enc(ns)}/configmaps/${enc(name)}`, { method: "PUT", body });
  }

  close(): Promise<void> {
    return this.kube.close();
  }
}

/** Whether `rules` allow `verb` on `resource` of `group` (wildcards as RBAC reads them). */
export function allows(rules: ResourceRule[], group: string, resource: string, verb: string): boolean {
  return rules.some(
    (r) =>
      (r.verbs.includes("*") || r.verbs.includes(verb)) &&
      (r.apiGroups ?? [""]).some((g) => g === "*" || g === group) &&
      (r.resources ?? []).some((x) => x === "*" || x === resource) &&
      // A rule limited to named objects does not grant list/create over the whole kind.
      !(r.resourceNames && r.resourceNames.length > 0),
  );
}
