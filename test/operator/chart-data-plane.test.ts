// The data plane a real operator applies with the settings the chart gives it, on the real test
// API server: owned by the chart's ConfigMap (so `helm uninstall` ends it through garbage
// collection), search's embedded store on its claim, no empty variable anywhere, and search
// refused — with a Warning Event — when it would run two replicas on the embedded store.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Operator } from "../../operator/src/manager.ts";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import { create, eventually, get, InMemorySearchDocuments, type Obj, quiesce, startOperatorFor } from "./helpers.ts";

const suffix = `${process.pid}-${Date.now().toString(36)}`;
const owned = `dp-${suffix}`;
const refused = `dpr-${suffix}`;
let client: TestKube;
const operators: Operator[] = [];

interface PodTemplate {
  spec: {
    strategy: { type: string };
    template: {
      spec: {
        volumes: { name: string; persistentVolumeClaim?: { claimName: string } }[];
        containers: { env: { name: string; value?: string }[] }[];
      };
    };
  };
}

async function start(ns: string, overrides: Record<string, unknown>): Promise<Operator> {
  const op = startOperatorFor(inject("kubeconfig"), ns, overrides, { search: new InMemorySearchDocuments() });
  operators.push(op);
  await op.start();
  return op;
}

beforeAll(async () => {
  client = harnessKubeClient();
  await installCrds(client);
  await ensureNamespace(client, owned);
  await ensureNamespace(client, refused);
});

afterAll(async () => {
  for (const op of operators) await op.stop();
});

describe("the shared data plane as the chart configures it", () => {
  it("is owned by the chart's ConfigMap and keeps search's store on its claim, with no empty variable", async () => {
    const cm = await create(client, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "capstan-operator", namespace: owned },
      data: { "operator.yaml": "" },
    });
    await start(owned, {
      watchNamespace: "",
      ownerConfigMap: "capstan-operator",
      redis: { url: "redis://capstan-redis:6379" },
      search: { persistence: { claimName: "capstan-search-data" } },
    });
    const owner = { apiVersion: "v1", kind: "ConfigMap", name: "capstan-operator", uid: cm.metadata.uid };
    for (const [apiVersion, kind, name] of [
      ["apps/v1", "Deployment", "capstan-gateway"],
      ["v1", "Service", "capstan-gateway"],
      ["apps/v1", "Deployment", "capstan-search"],
      ["v1", "Service", "capstan-search"],
      ["v1", "Secret", "capstan-internal-token"],
      ["v1", "Secret", "capstan-key-verifier"],
    ] as const) {
      const obj = await eventually(`${kind} ${name}`, () => get(client, apiVersion, kind, owned, name));
      expect(obj.metadata.ownerReferences, `${kind} ${name}`).toEqual([owner]);
    }
    const search = (await get(client, "apps/v1", "Deployment", owned, "capstan-search")) as Obj & PodTemplate;
    expect(search.spec.strategy.type).toBe("Recreate");
    expect(search.spec.template.spec.volumes).toContainEqual({
      name: "data",
      persistentVolumeClaim: { claimName: "capstan-search-data" },
    });
    for (const name of ["capstan-gateway", "capstan-search"]) {
      const d = (await get(client, "apps/v1", "Deployment", owned, name)) as Obj & PodTemplate;
      const env = d.spec.template.spec.containers.flatMap((c) => c.env);
      expect(
        env.filter((e) => e.value === ""),
        name,
      ).toEqual([]);
      expect(
        env.map((e) => e.name),
        name,
      ).not.toContain("CAPSTAN_NAMESPACE");
    }
  });
});

describe("two search replicas on the embedded store", () => {
  it("are refused: no search Deployment, the Service stays, a Warning Event says why", async () => {
    const op = await start(refused, { redis: { url: "redis://capstan-redis:6379" }, search: { replicas: 2 } });
    await eventually("the gateway Deployment", () => get(client, "apps/v1", "Deployment", refused, "capstan-gateway"));
    const service = await eventually("the search Service", () =>
      get(client, "v1", "Service", refused, "capstan-search"),
    );
    const events = await eventually("the Warning Event", async () => {
      const list = await client.json<{ items: (Obj & { reason: string; type: string; note: string })[] }>(
        `/apis/events.k8s.io/v1/namespaces/${refused}/events`,
      );
      const found = list.items.filter((e) => e.reason === "SearchReplicasRefused");
      return found.length > 0 ? found : undefined;
    });
    expect(events[0]?.type).toBe("Warning");
    expect(events[0]?.note).toContain("search.replicas is 2");
    expect((events[0]?.regarding as { uid?: string } | undefined)?.uid).toBe(service.metadata.uid);
    await quiesce(op);
    expect(await get(client, "apps/v1", "Deployment", refused, "capstan-search")).toBeUndefined();
  });
});
