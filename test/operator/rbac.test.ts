// The chart's RBAC rules are enough and no more: the operator runs on the real API server (RBAC
// authorization on) as a ServiceAccount bound only to files/rbac/*.yaml and brings examples/ to
// Ready with leader election; the data plane's ServiceAccount can read the five kinds and not Secrets.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createLogger, createRegistry } from "@capstan/shared";
import { KubeApiError } from "@capstan/shared/kube";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadOperatorConfig } from "../../operator/src/config.ts";
import { Operator } from "../../operator/src/manager.ts";
import { ensureNamespace, harnessKubeClient, installCrds, rawExamples, type TestKube } from "../ground/kube-client.ts";
import { CAP, create, InMemorySearchDocuments, type Obj, whenCondition } from "./helpers.ts";
import { serviceAccountClient } from "./rbac-kit.ts";

const ns = `rbac-${process.pid}-${Date.now().toString(36)}`;
const rbacDir = fileURLToPath(new URL("../../charts/capstan/files/rbac/", import.meta.url));
const rules = (f: string) => parse(readFileSync(rbacDir + f, "utf8"));
let admin: TestKube;
let operator: Operator | undefined;

beforeAll(async () => {
  admin = harnessKubeClient();
  await installCrds(admin);
  await ensureNamespace(admin, ns);
});

afterAll(async () => {
  await operator?.stop();
});

describe("RBAC from charts/capstan/files/rbac", () => {
  it("the operator works with exactly its rules", async () => {
    const sa = await serviceAccountClient(
      admin,
      ns,
      "capstan-operator",
      rules("operator-rules.yaml"),
      rules("release-namespace-rules.yaml"),
    );
    const config = loadOperatorConfig(
      {},
      { namespace: ns, watchNamespace: ns, instanceId: "rbac-test", leaderElection: { enabled: true } },
    );
    operator = new Operator(config, {
      kubeConfig: sa.kubeConfig,
      registry: createRegistry({ defaultMetrics: false }),
      logger: createLogger({ name: "operator-rbac", level: process.env.OPERATOR_TEST_LOG ?? "silent" }),
      search: new InMemorySearchDocuments(),
    });
    await operator.start();
    for (const raw of rawExamples()) {
      if (raw.kind === "Namespace") continue;
      await create(admin, { ...raw, metadata: { ...raw.metadata, namespace: ns } } as Obj);
    }
    for (const raw of rawExamples()) {
      if (raw.kind === "Namespace") continue;
      await whenCondition(admin, raw.kind, ns, raw.metadata.name, "Ready", "True");
    }
    expect(operator.isLeader).toBe(true);
    const counts = await operator.registry.getSingleMetricAsString("rest_client_requests_total");
    expect(counts).not.toMatch(/code="403"/);
  });

  it("the operator cannot list or watch Secrets it does not own: none cluster-wide, none in another namespace", async () => {
    const sa = await serviceAccountClient(
      admin,
      ns,
      "capstan-operator-secrets",
      rules("operator-rules.yaml"),
      rules("release-namespace-rules.yaml"),
    );
    const foreign = `${ns}-foreign`;
    await ensureNamespace(admin, foreign);
    await create(admin, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "team-database", namespace: foreign },
      data: { password: Buffer.from("hunter2").toString("base64") },
    } as Obj);
    const status = async (path: string) =>
      sa.json(path).then(
        () => 200,
        (err: unknown) => (err instanceof KubeApiError ? err.status : 0),
      );
    expect(await status("/api/v1/secrets")).toBe(403);
    expect(await status("/api/v1/secrets?watch=true&timeoutSeconds=1")).toBe(403);
    expect(await status(`/api/v1/namespaces/${foreign}/secrets`)).toBe(403);
    expect(
      await status(
        `/api/v1/namespaces/${foreign}/secrets?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dcapstan-operator`,
      ),
    ).toBe(403);
    // Its own namespace: the label-selected cache of the Secrets it owns.
    expect(
      await status(`/api/v1/namespaces/${ns}/secrets?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dcapstan-operator`),
    ).toBe(200);
  });

  it("the data plane can read the five kinds and nothing else", async () => {
    const dp = await serviceAccountClient(admin, ns, "capstan-data-plane", rules("data-plane-rules.yaml"));
    for (const plural of ["agents", "accesschannels", "searchkeys", "knowledgebases", "scrapers"]) {
      await expect(dp.json(`/apis/${CAP}/namespaces/${ns}/${plural}`)).resolves.toBeDefined();
    }
    const denied = async (path: string, method: "GET" | "POST" = "GET") => {
      try {
        await dp.json(path, {
          method,
          ...(method === "POST" ? { body: { apiVersion: CAP, kind: "Agent", metadata: { name: "x" }, spec: {} } } : {}),
        });
        return false;
      } catch (err) {
        return err instanceof KubeApiError && err.status === 403;
      }
    };
    expect(await denied(`/api/v1/namespaces/${ns}/secrets`)).toBe(true);
    expect(await denied(`/apis/${CAP}/namespaces/${ns}/agents`, "POST")).toBe(true);
  });
});
