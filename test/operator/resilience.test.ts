// Leader election and API-server restarts, on a private control plane (this file restarts it).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Operator } from "../../operator/src/manager.ts";
import { type KubeControlPlane, startKube } from "../ground/kube.ts";
import { ensureNamespace, installCrds, kubeHttpFrom, type TestKube } from "../ground/kube-client.ts";
import { CAP, create, eventually, get, type Obj, patch, startOperatorFor, whenCondition } from "./helpers.ts";

let kube: KubeControlPlane;
let client: TestKube;
const ns = "resilience";
const running: Operator[] = [];

function operator(id: string, leaderElection: Record<string, unknown>): Operator {
  const op = startOperatorFor(
    kube.kubeconfig,
    ns,
    { instanceId: id, leaderElection },
    {
      onLostLeadership: () => undefined,
    },
  );
  running.push(op);
  return op;
}

const channel = (name: string): Obj => ({
  apiVersion: CAP,
  kind: "AccessChannel",
  metadata: { name, namespace: ns },
  spec: { channelName: name, agentRef: { name: "agent" } },
});

beforeAll(async () => {
  kube = await startKube();
  client = kubeHttpFrom(kube.kubeconfig);
  await installCrds(client);
  await ensureNamespace(client, ns);
  await create(client, {
    apiVersion: CAP,
    kind: "Agent",
    metadata: { name: "agent", namespace: ns },
    spec: { provider: { baseURL: "https://llm.example/v1", model: "m" } },
  });
});

afterAll(async () => {
  for (const op of running) await op.stop().catch(() => undefined);
  await kube?.stop();
});

const lease = async () =>
  (await get(client, "coordination.k8s.io/v1", "Lease", ns, "capstan-operator"))?.spec as
    | { holderIdentity?: string }
    | undefined;
const reconciles = (op: Operator) => Object.values(op.controllers).reduce((n, c) => n + c.reconciles, 0);

describe("leader election", () => {
  it("only the leader reconciles; the standby takes over when the leader stops", async () => {
    const le = { enabled: true };
    const a = operator("instance-a", le);
    await a.start();
    await eventually("a leads", () => a.isLeader);
    const b = operator("instance-b", le);
    await b.start();
    expect((await lease())?.holderIdentity).toBe("instance-a");

    await create(client, channel("one"));
    await whenCondition(client, "AccessChannel", ns, "one", "Ready", "True");
    expect(b.isLeader).toBe(false);
    expect(reconciles(b)).toBe(0);
    expect(b.http.writes).toBe(0);
    expect(reconciles(a)).toBeGreaterThan(0);

    await a.stop(); // releases the Lease
    await eventually("b leads", () => b.isLeader);
    expect((await lease())?.holderIdentity).toBe("instance-b");
    await create(client, channel("two"));
    await whenCondition(client, "AccessChannel", ns, "two", "Ready", "True");
    expect(reconciles(b)).toBeGreaterThan(0);
    await b.stop();
  });

  it("a candidate waits out a lease its holder stopped renewing, then takes it", async () => {
    const l = (await get(client, "coordination.k8s.io/v1", "Lease", ns, "capstan-operator")) as Obj;
    const now = new Date().toISOString().replace("Z", "000Z");
    await client.json(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/capstan-operator`, {
      method: "PUT",
      body: {
        ...l,
        spec: {
          holderIdentity: "crashed",
          leaseDurationSeconds: 3,
          renewTime: now,
          acquireTime: now,
          leaseTransitions: 5,
        },
      },
    });
    const c = operator("instance-c", {
      enabled: true,
      leaseDurationSeconds: 3,
      renewDeadlineSeconds: 2,
      retryPeriodSeconds: 0.5,
    });
    const started = Date.now();
    await c.start();
    await eventually("c leads", () => c.isLeader);
    // Not before the holder's lease duration has passed since c first saw the record.
    expect(Date.now() - started).toBeGreaterThanOrEqual(2500);
    const spec = (await lease()) as { holderIdentity: string; leaseTransitions: number };
    expect(spec).toMatchObject({ holderIdentity: "instance-c", leaseTransitions: 6 });
    await c.stop();
  });
});

describe("API server restart", () => {
  it("the operator recovers on its own: watches resume and new objects are reconciled", async () => {
    const op = operator("instance-r", { enabled: false });
    await op.start();
    await create(client, channel("before"));
    await whenCondition(client, "AccessChannel", ns, "before", "Ready", "True");

    await kube.restartApiServer();

    await create(client, channel("after"));
    await whenCondition(client, "AccessChannel", ns, "after", "Ready", "True");
    // An update of an existing object is seen too.
    await patch(
      client,
      { apiVersion: CAP, kind: "AccessChannel", ns, name: "before" },
      { spec: { agentRef: { name: "missing" } } },
    );
    await whenCondition(client, "AccessChannel", ns, "before", "Ready", "False", "AgentNotFound");
    await op.stop();
  });
});
