// What the RBAC and admission tests share: clients that act as someone else on the real API server
// (a ServiceAccount bound to given rules, or a user impersonated by the admin), rendered objects
// applied for real, and the API server's own answer to "may this subject do that?".
import { createRegistry } from "@capstan/shared";
import { kubeConfigAs, TestKube } from "../ground/kube-client.ts";
import { pathOf, type Rendered } from "./chart-kit.ts";
import { create, type Obj } from "./helpers.ts";

const RBAC = "/apis/rbac.authorization.k8s.io/v1";

/** A Role (in ns) or ClusterRole (ns undefined) with these rules, bound to these subjects. */
export async function grant(
  admin: TestKube,
  ns: string | undefined,
  name: string,
  rules: unknown,
  subjects: unknown[],
): Promise<void> {
  const base = ns ? `${RBAC}/namespaces/${ns}` : RBAC;
  const [role, binding] = ns ? ["Role", "RoleBinding"] : ["ClusterRole", "ClusterRoleBinding"];
  const api = "rbac.authorization.k8s.io/v1";
  await admin.json(`${base}/${role === "Role" ? "roles" : "clusterroles"}`, {
    method: "POST",
    body: { apiVersion: api, kind: role, metadata: { name }, rules },
  });
  await admin.json(`${base}/${binding === "RoleBinding" ? "rolebindings" : "clusterrolebindings"}`, {
    method: "POST",
    body: {
      apiVersion: api,
      kind: binding,
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: role, name },
      subjects,
    },
  });
}

/**
 * A client acting as a new ServiceAccount `name` of `ns`, bound cluster-wide to clusterRules (when
 * given) and in ns to nsRules (when given); its token from the TokenRequest API, no certificate.
 */
export async function serviceAccountClient(
  admin: TestKube,
  ns: string,
  name: string,
  clusterRules?: unknown,
  nsRules?: unknown,
): Promise<TestKube> {
  await create(admin, { apiVersion: "v1", kind: "ServiceAccount", metadata: { name, namespace: ns } } as Obj);
  const subjects = [{ kind: "ServiceAccount", name, namespace: ns }];
  if (clusterRules) await grant(admin, undefined, `${ns}-${name}`, clusterRules, subjects);
  if (nsRules) await grant(admin, ns, name, nsRules, subjects);
  return serviceAccountToken(admin, ns, name);
}

/** A client with a fresh token of an existing ServiceAccount. */
export async function serviceAccountToken(admin: TestKube, ns: string, name: string): Promise<TestKube> {
  const tr = await admin.json<{ status: { token: string } }>(`/api/v1/namespaces/${ns}/serviceaccounts/${name}/token`, {
    method: "POST",
    body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 3600 } },
  });
  return new TestKube(
    kubeConfigAs(admin.kubeConfig, { name, token: tr.status.token }, ns),
    createRegistry({ defaultMetrics: false }),
  );
}

/** The admin's credentials, impersonating `user` (as `kubectl --as`): RBAC and admission see `user`. */
export function impersonating(admin: TestKube, user: string, ns: string): TestKube {
  const self = admin.kubeConfig.getCurrentUser();
  if (!self) throw new Error("admin kubeconfig: no current user");
  return new TestKube(
    kubeConfigAs(admin.kubeConfig, { ...self, name: `as-${user}`, impersonateUser: user }, ns),
    createRegistry({ defaultMetrics: false }),
  );
}

/** Creates (or replaces) a rendered object for real: server-side apply, forced. */
export async function applyRendered(admin: TestKube, obj: Rendered, ns: string): Promise<void> {
  await admin.json(pathOf(obj, ns), {
    method: "PATCH",
    contentType: "application/apply-patch+yaml",
    query: { fieldManager: "capstan-test", force: "true" },
    body: obj,
  });
}

export interface Access {
  verb: string;
  resource: string;
  group?: string;
  namespace?: string;
  name?: string;
}

/** The API server's answer (SubjectAccessReview) to whether `user` may do `access`. */
export async function mayDo(admin: TestKube, user: string, access: Access): Promise<boolean> {
  const review = await admin.json<{ status: { allowed: boolean } }>(
    "/apis/authorization.k8s.io/v1/subjectaccessreviews",
    {
      method: "POST",
      body: {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec: {
          user,
          // A ServiceAccount's groups, as its token would carry them.
          groups: user.startsWith("system:serviceaccount:")
            ? ["system:serviceaccounts", `system:serviceaccounts:${user.split(":")[2]}`, "system:authenticated"]
            : ["system:authenticated"],
          resourceAttributes: { group: access.group ?? "", ...access },
        },
      },
    },
  );
  return review.status.allowed;
}
