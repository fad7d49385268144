// Least privilege with operator.watchNamespaces (issue 25): the chart renders Roles in the watched
// namespaces and the release namespace and no ClusterRole for the operator; the real API server
// (SubjectAccessReview) says its ServiceAccount may act there and nowhere else; and the operator
// runs on those Roles alone, watching only its namespaces (no cluster-wide list is attempted).
import { createLogger, createRegistry } from "@capstan/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadOperatorConfig } from "../../operator/src/config.ts";
import { Operator } from "../../operator/src/manager.ts";
import { OPERATOR_RULES, RELEASE_NAMESPACE_RULES } from "../../operator/src/rbac.ts";
import { ensureNamespace } from "../ground/kube-client.ts";
import { ChartRun, MINIMAL, one, operatorOf, pod, type Rendered } from "./chart-kit.ts";
import { CAP, create, get, InMemorySearchDocuments, type Obj, whenCondition } from "./helpers.ts";
import { applyRendered, mayDo, serviceAccountToken } from "./rbac-kit.ts";

const run = new ChartRun("rbacns");
const a = `${run.ns}-a`;
const b = `${run.ns}-b`;
const other = `${run.ns}-c`;
const RBAC_KINDS = new Set(["ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"]);
let objects: Rendered[];
let saName: string;
let operator: Operator | undefined;

const saUser = () => `system:serviceaccount:${run.ns}:${saName}`;

beforeAll(async () => {
  await run.setup();
  for (const n of [a, b, other]) await ensureNamespace(run.admin, n);
  // The earlier single value (watchNamespace) and the list together: both are watched.
  objects = await run.render([
    ...MINIMAL,
    `operator.watchNamespaces={${a}}`,
    `operator.watchNamespace=${b}`,
    "admission.enabled=false",
  ]);
  for (const o of objects) if (RBAC_KINDS.has(o.kind)) await applyRendered(run.admin, o, run.ns);
  saName = (pod(operatorOf(objects)) as { serviceAccountName?: string }).serviceAccountName ?? "";
});

afterAll(async () => {
  await operator?.stop();
  run.cleanup();
});

describe("operator.watchNamespaces: namespaced RBAC", () => {
  it("renders the operator's rules as Roles in the watched namespaces only, plus its own namespace, and no ClusterRole", async () => {
    const roles = objects.filter((o) => o.kind === "Role");
    const where = (rules: unknown) =>
      roles
        .filter((r) => JSON.stringify((r as { rules?: unknown }).rules) === JSON.stringify(rules))
        .map((r) => r.metadata.namespace)
        .sort();
    expect(where(OPERATOR_RULES)).toEqual([a, b].sort());
    expect(where(RELEASE_NAMESPACE_RULES)).toEqual([run.ns]);
    // The one ClusterRole left is the data plane's: read-only on the five kinds.
    expect(objects.filter((o) => o.kind === "ClusterRole").map((o) => o.metadata.name)).toEqual([
      `${run.release}-capstan-data-plane`,
    ]);
    const config = run.operatorConfig(objects);
    expect([...config.watchNamespaces, config.watchNamespace].filter(Boolean).sort()).toEqual([a, b].sort());

    // All namespaces (the default): the same rules in one ClusterRole, no per-namespace Role.
    const wide = await run.render([...MINIMAL]);
    expect((one(wide, "ClusterRole", `${run.release}-capstan-operator`) as { rules?: unknown }).rules).toEqual(
      OPERATOR_RULES,
    );
    // (The console's own Role, listing EndpointSlices for its usage page, is not the operator's.)
    const operatorRoles = wide.filter(
      (o) => o.kind === "Role" && !o.metadata.name.endsWith("-console-gateway-replicas"),
    );
    expect(operatorRoles.map((o) => o.metadata.namespace)).toEqual([run.ns]);
  });

  it("the API server lets the operator's ServiceAccount act in its namespaces and nowhere else (SubjectAccessReview)", async () => {
    const watched: [string, string, string?][] = [
      ["get", "secrets"],
      ["create", "secrets"],
      ["delete", "secrets"],
      ["create", "deployments", "apps"],
      ["patch", "services"],
      ["list", "agents", "capstan.dev"],
      ["watch", "scrapers", "capstan.dev"],
      ["patch", "accesschannels/status", "capstan.dev"],
    ];
    for (const [verb, resource, group] of watched) {
      const [res, subresource] = resource.split("/") as [string, string | undefined];
      const access = { verb, resource: res, ...(subresource ? { subresource } : {}), ...(group ? { group } : {}) };
      for (const n of [a, b])
        expect(await mayDo(run.admin, saUser(), { ...access, namespace: n }), `${verb} ${resource} in ${n}`).toBe(true);
      expect(await mayDo(run.admin, saUser(), { ...access, namespace: other }), `${verb} ${resource} in ${other}`).toBe(
        false,
      );
      expect(await mayDo(run.admin, saUser(), access), `${verb} ${resource} cluster-wide`).toBe(false);
    }
    // Its own namespace: the Lease, its Secrets' cache, the shared data plane.
    for (const [verb, resource, group] of [
      ["update", "leases", "coordination.k8s.io"],
      ["list", "secrets", ""],
      ["create", "deployments", "apps"],
    ] as const)
      expect(await mayDo(run.admin, saUser(), { verb, resource, group, namespace: run.ns })).toBe(true);
    // Never: running pods or reading RBAC anywhere, listing Secrets in a watched namespace.
    expect(await mayDo(run.admin, saUser(), { verb: "create", resource: "pods", namespace: a })).toBe(false);
    expect(await mayDo(run.admin, saUser(), { verb: "list", resource: "secrets", namespace: a })).toBe(false);
  });

  it("the operator runs on those Roles alone and watches only its namespaces", async () => {
    const sa = await serviceAccountToken(run.admin, run.ns, saName);
    operator = new Operator(
      loadOperatorConfig(
        {},
        {
          namespace: run.ns,
          watchNamespaces: [a],
          watchNamespace: b,
          instanceId: "rbac-namespaced",
          metricsPort: 0,
          healthPort: 0,
          leaderElection: { enabled: true },
        },
      ),
      {
        kubeConfig: sa.kubeConfig,
        registry: createRegistry({ defaultMetrics: false }),
        logger: createLogger({ name: "operator-rbac-ns", level: process.env.OPERATOR_TEST_LOG ?? "silent" }),
        search: new InMemorySearchDocuments(),
      },
    );
    await operator.start();
    const agent = (n: string): Obj => ({
      apiVersion: CAP,
      kind: "Agent",
      metadata: { name: "helper", namespace: n },
      spec: { provider: { baseURL: "https://llm.example/v1", model: "m" } },
    });
    const channel = (n: string): Obj => ({
      apiVersion: CAP,
      kind: "AccessChannel",
      metadata: { name: "web", namespace: n },
      spec: { channelName: "web", agentRef: { name: "helper" } },
    });
    for (const n of [a, b, other]) {
      await create(run.admin, agent(n));
      await create(run.admin, channel(n));
    }
    for (const n of [a, b]) {
      await whenCondition(run.admin, "AccessChannel", n, "web", "Ready", "True");
      await whenCondition(run.admin, "Agent", n, "helper", "Ready", "True");
    }
    // The gateway and search workloads, in its own namespace.
    await expect(get(run.admin, "apps/v1", "Deployment", run.ns, "capstan-gateway")).resolves.toBeDefined();
    // The unwatched namespace is never reconciled: no status, no key Secret.
    expect((await get(run.admin, CAP, "AccessChannel", other, "web"))?.status).toBeUndefined();
    const counts = await operator.registry.getSingleMetricAsString("rest_client_requests_total");
    expect(counts).not.toMatch(/code="403"/);
  });
});
