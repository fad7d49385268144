// Steady state on the real API server: once the examples are reconciled and nothing is failing, a
// resync writes nothing, and a restarted operator issues no second key and writes nothing.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Operator } from "../../operator/src/manager.ts";
import { ensureNamespace, harnessKubeClient, installCrds, rawExamples, type TestKube } from "../ground/kube-client.ts";
import {
  CAP,
  condition,
  create,
  eventually,
  get,
  InMemorySearchDocuments,
  list,
  type Obj,
  quiesce,
  startOperatorFor,
  whenCondition,
} from "./helpers.ts";

const ns = `steady-${process.pid}-${Date.now().toString(36)}`;
let client: TestKube;
let operator: Operator;
const search = new InMemorySearchDocuments();
const overrides = { redis: { url: "redis://redis.example:6379" }, qdrant: { url: "http://qdrant.example:6333" } };

beforeAll(async () => {
  client = harnessKubeClient();
  await installCrds(client);
  await ensureNamespace(client, ns);
  operator = startOperatorFor(inject("kubeconfig"), ns, overrides, { search });
  await operator.start();
  for (const raw of rawExamples()) {
    if (raw.kind === "Namespace") continue;
    const obj = { ...raw, metadata: { ...raw.metadata, namespace: ns } } as Obj;
    // Steady state means nothing failing: a failed source is retried on its backoff (writes), and
    // the example's page cannot be reached from here, so the knowledge base keeps its inline text.
    if (obj.kind === "KnowledgeBase") {
      const sources = (obj.spec?.sources ?? []) as { url?: string }[];
      obj.spec = { ...obj.spec, sources: sources.filter((s) => !s.url) };
    }
    await create(client, obj);
  }
  await whenCondition(client, "AccessChannel", ns, "website-chat", "Ready", "True");
  await whenCondition(client, "SearchKey", ns, "docs-search-backend", "Ready", "True");
  await eventually("product-docs ingested with nothing failing", async () => {
    const o = await get(client, CAP, "KnowledgeBase", ns, "product-docs");
    return o?.status?.failures === 0 && condition(o, "Ingested")?.status === "True" ? o : undefined;
  });
});

afterAll(async () => {
  await operator?.stop();
});

describe("steady state", () => {
  it("a resync writes nothing; a restarted operator issues no second key and writes nothing", async () => {
    await quiesce(operator);
    const writes = operator.http.writes;
    const seen: string[] = [];
    operator.http.onWrite = (m, p) => seen.push(`${m} ${p}`);
    for (const inf of Object.values(operator.informers)) inf.resync();
    await quiesce(operator);
    expect(seen).toEqual([]);
    expect(operator.http.writes - writes).toBe(0);

    const secretsBefore = (await list(client, "v1", "Secret", ns)).map((s) => [s.metadata.name, s.data?.key]);
    const statusBefore = (await list(client, CAP, "AccessChannel", ns)).map((c) => [
      c.metadata.name,
      c.status?.keyHash,
    ]);
    await operator.stop();
    operator = startOperatorFor(inject("kubeconfig"), ns, overrides, { search });
    await operator.start();
    await quiesce(operator);
    const reconciled = Object.values(operator.controllers).reduce((n, c) => n + c.reconciles, 0);
    expect(reconciled).toBeGreaterThan(0);
    expect(operator.http.writes).toBe(0);
    expect((await list(client, "v1", "Secret", ns)).map((s) => [s.metadata.name, s.data?.key])).toEqual(secretsBefore);
    expect((await list(client, CAP, "AccessChannel", ns)).map((c) => [c.metadata.name, c.status?.keyHash])).toEqual(
      statusBefore,
    );
  });
});
