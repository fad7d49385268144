// What a signed-in user does, done with THEIR token against the API server (pass-through): RBAC
// decides every read and write, the console itself has no rights. One pooled connection per session;
// the calls are client-node's (CustomObjectsApi for the capstan.dev kinds, whose JSON it keeps as the
// server sent it, CoreV1Api for Secrets, the review APIs), their failures as KubeApiError.
import { createRegistry } from "@capstan/shared";
import { GROUP, VERSION } from "@capstan/shared/api";
import { conciseError, KubeConfig, KubeHttp, type Meta } from "@capstan/shared/kube";
import {
  AuthenticationV1Api,
  AuthorizationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  type V1ConfigMap,
} from "@kubernetes/client-node";
import type { SessionUser } from "./sessions.ts";

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

/** The base config's cluster and CA with a bearer token as the user. */
export function kubeConfigAs(base: KubeConfig, token: string): KubeConfig {
  const cluster = base.getCurrentCluster();
  if (!cluster) throw new Error("kubeconfig: no current cluster");
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: "console-user", token }],
    contexts: [{ name: "console", cluster: cluster.name, user: "console-user" }],
    currentContext: "console",
  });
  return kc;
}

/** A Kubernetes client acting as one user: the base config's cluster and CA, the user's bearer token. */
export function kubeAsUser(base: KubeConfig, token: string): KubeHttp {
  // Per-session metrics would be noise (and a label per user): this registry is never exported.
  return new KubeHttp(kubeConfigAs(base, token), createRegistry({ defaultMetrics: false }), { timeoutMs: 15_000 });
}

/** A client-node call's result as the JSON shape the console reads, its failure as a KubeApiError. */
async function concise<T>(call: Promise<unknown>): Promise<T> {
  try {
    return (await call) as T;
  } catch (err) {
    throw conciseError(err);
  }
}

/**
 * What the routes do with a signed-in user's authority: UserApi against the API server with their
 * token, or LocalApi (local-api.ts) on standalone mode's YAML folder. Failures are KubeApiErrors
 * (404, 409 … as the API server gives them), so the routes treat both alike.
 */
export interface ConsoleApi {
  /** Uploaded documents become inline text sources (standalone mode), not ConfigMaps. */
  readonly inlineDocuments?: boolean;
  whoAmI(): Promise<SessionUser>;
  rules(namespace: string): Promise<ResourceRule[]>;
  list(plural: string, ns: string): Promise<{ items: KubeObject[] }>;
  get(plural: string, ns: string, name: string): Promise<KubeObject>;
  create(plural: string, ns: string, body: KubeObject): Promise<KubeObject>;
  /** A JSON merge patch (RFC 7386): null removes a field. */
  patch(plural: string, ns: string, name: string, body: unknown): Promise<KubeObject>;
  remove(plural: string, ns: string, name: string): Promise<void>;
  getSecret(ns: string, name: string): Promise<KubeObject>;
  deleteSecret(ns: string, name: string): Promise<void>;
  createConfigMap(ns: string, body: KubeObject): Promise<void>;
  replaceConfigMap(ns: string, name: string, body: KubeObject): Promise<void>;
  close(): Promise<void>;
}

export class UserApi implements ConsoleApi {
  readonly kube: KubeHttp;
  private readonly custom: CustomObjectsApi;
  private readonly core: CoreV1Api;
  private readonly authn: AuthenticationV1Api;
  private readonly authz: AuthorizationV1Api;
  constructor(kube: KubeHttp) {
    this.kube = kube;
    this.custom = kube.api(CustomObjectsApi);
    this.core = kube.api(CoreV1Api);
    this.authn = kube.api(AuthenticationV1Api);
    this.authz = kube.api(AuthorizationV1Api);
  }

  /** Who the token belongs to, as the API server authenticates it (SelfSubjectReview). */
  async whoAmI(): Promise<SessionUser> {
    const r = await concise<{ status?: { userInfo?: { username?: string; groups?: string[] } } }>(
      this.authn.createSelfSubjectReview({
        body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
      }),
    );
    const info = r.status?.userInfo ?? {};
    return { username: info.username ?? "(unknown)", groups: info.groups ?? [] };
  }

  /** The user's rules in a namespace (SelfSubjectRulesReview), to hide what they may not do. */
  async rules(namespace: string): Promise<ResourceRule[]> {
    const r = await concise<{ status?: { resourceRules?: ResourceRule[] } }>(
      this.authz.createSelfSubjectRulesReview({
        body: { apiVersion: "authorization.k8s.io/v1", kind: "SelfSubjectRulesReview", spec: { namespace } },
      }),
    );
    return r.status?.resourceRules ?? [];
  }

  list(plural: string, ns: string): Promise<{ items: KubeObject[] }> {
    return concise(this.custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural }));
  }

  get(plural: string, ns: string, name: string): Promise<KubeObject> {
    return concise(
      this.custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural, name }),
    );
  }

  create(plural: string, ns: string, body: KubeObject): Promise<KubeObject> {
    return concise(
      this.custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural, body }),
    );
  }

  /** A JSON merge patch (RFC 7386): null removes a field. */
  patch(plural: string, ns: string, name: string, body: unknown): Promise<KubeObject> {
    return concise(
      this.custom.patchNamespacedCustomObject(
        { group: GROUP, version: VERSION, namespace: ns, plural, name, body },
        this.kube.options({ contentType: PatchStrategy.MergePatch }),
      ),
    );
  }

  async remove(plural: string, ns: string, name: string): Promise<void> {
    await concise(
      this.custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural, name }),
    );
  }

  /** The Secret's data (what the console reads of it). */
  async getSecret(ns: string, name: string): Promise<KubeObject> {
    const secret = await concise<{ data?: Record<string, string> }>(
      this.core.readNamespacedSecret({ namespace: ns, name }),
    );
    return { metadata: { name, namespace: ns }, ...(secret.data ? { data: secret.data } : {}) };
  }

  async deleteSecret(ns: string, name: string): Promise<void> {
    await concise(this.core.deleteNamespacedSecret({ namespace: ns, name }));
  }

  async createConfigMap(ns: string, body: KubeObject): Promise<void> {
    await concise(this.core.createNamespacedConfigMap({ namespace: ns, body: body as V1ConfigMap }));
  }

  async replaceConfigMap(ns: string, name: string, body: KubeObject): Promise<void> {
    await concise(this.core.replaceNamespacedConfigMap({ namespace: ns, name, body: body as V1ConfigMap }));
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
