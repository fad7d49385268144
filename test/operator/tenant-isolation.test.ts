// Tenant isolation on the real API server: two namespaces each with a KnowledgeBase of the same
// knowledgeId, each reconciled by an operator into one real search service whose view watches the
// API server. A SearchKey of `a` and the internal caller on behalf of an Agent of `a` reach only
// `a`'s knowledge bases (a 400 in the search envelope naming only the id sent); a duplicate id in
// one namespace is refused without touching the owner's vectors; deleting `a`'s KnowledgeBase
// leaves `b`'s searchable.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Operator } from "../../operator/src/manager.ts";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import {
  CAP,
  condition,
  create,
  eventually,
  get,
  type Obj,
  remove,
  startOperatorFor,
  whenCondition,
} from "./helpers.ts";
import { type ServedSearch, startSearchForNamespaces } from "./served-search.ts";

const suffix = `${process.pid}-${Date.now().toString(36)}`;
const A = `tenant-a-${suffix}`;
const B = `tenant-b-${suffix}`;
const TOKEN = "tenant-isolation-test-token-0123456789";
const APPLES = "The cafeteria of building A serves apple pie on Fridays.";
const VAULT = "The vault in the basement of building B opens with code 4711.";
const SALARIES = "Salaries of team B are reviewed every April by the works council.";

let client: TestKube;
let operators: Operator[] = [];
let search: ServedSearch;
let url: string;
const keys: Record<string, string> = {};

const kb = (ns: string, name: string, knowledgeId: string, text: string): Obj => ({
  apiVersion: CAP,
  kind: "KnowledgeBase",
  metadata: { name, namespace: ns },
  spec: { knowledgeId, sources: [{ name, text }] },
});

interface Envelope {
  code: number;
  message: string;
  data: { text: string; knowledgeId: string }[] | null;
}

async function searchAs(headers: Record<string, string>, knowledgeIds: string[]) {
  // The internal token (an Agent's retrieval) searches on search's internal port only.
  const base = headers.authorization === `Bearer ${TOKEN}` ? search.internalUrl : url;
  const res = await fetch(`${base}/v1/rag/search`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ knowledgeIds, text: "What is in building B and building A?", minSimilarity: 0 }),
  });
  const raw = await res.text();
  return { status: res.status, raw, body: JSON.parse(raw) as Envelope };
}
const withKey = (key: string) => ({ authorization: `Bearer ${key}` });
// What the gateway sends when an Agent of that namespace retrieves.
const asAgentOf = (ns: string) => ({ authorization: `Bearer ${TOKEN}`, "x-capstan-namespace": ns });

/** The key issued into the SearchKey's Secret (a's is not Ready: kb_hr has no KnowledgeBase in a). */
async function issuedKey(ns: string, name: string): Promise<string | undefined> {
  const secret = await get(client, "v1", "Secret", ns, `${name}-search-key`);
  const key = Buffer.from(secret?.data?.key ?? "", "base64").toString("utf8");
  return key || undefined;
}

beforeAll(async () => {
  client = harnessKubeClient();
  await installCrds(client);
  await ensureNamespace(client, A);
  await ensureNamespace(client, B);
  // All namespaces, read-only, as search runs in a cluster.
  search = await startSearchForNamespaces(client, [A, B], TOKEN);
  url = search.url;
  // One operator per namespace (each watches its own, as other test files run beside this one).
  operators = [A, B].map((ns) =>
    startOperatorFor(inject("kubeconfig"), ns, { search: { internalUrl: search.internalUrl } }),
  );
  await Promise.all(operators.map((o) => o.start()));

  await create(client, kb(A, "docs", "kb_shared", APPLES));
  await create(client, kb(B, "docs", "kb_shared", VAULT));
  await create(client, kb(B, "hr", "kb_hr", SALARIES));
  for (const [ns, name] of [
    [A, "docs"],
    [B, "docs"],
    [B, "hr"],
  ] as const) {
    await whenCondition(client, "KnowledgeBase", ns, name, "Ready", "True");
  }
  for (const [ns, scope] of [
    [A, ["kb_shared", "kb_hr"]],
    [B, ["kb_shared", "kb_hr"]],
  ] as const) {
    await create(client, {
      apiVersion: CAP,
      kind: "SearchKey",
      metadata: { name: "reader", namespace: ns },
      spec: { keyName: "reader", knowledgeIds: [...scope] },
    });
  }
  keys.a = await eventually("a's key", () => issuedKey(A, "reader"));
  keys.b = await eventually("b's key", () => issuedKey(B, "reader"));
  const a = await whenCondition(client, "SearchKey", A, "reader", "Ready", "False");
  expect(condition(a, "Ready")?.message).toContain("kb_hr");
  // Search's view has the keys' hashes.
  await eventually(
    "keys in search's view",
    async () => (await searchAs(withKey(keys.b as string), ["kb_hr"])).status === 200,
  );
}, 300_000);

afterAll(async () => {
  await Promise.all(operators.map((o) => o.stop()));
  await search?.close();
});

describe("knowledge bases are namespaced", () => {
  it("a SearchKey of a cannot read b's knowledge base, with the same id or another one", async () => {
    const denied = await searchAs(withKey(keys.a as string), ["kb_hr"]);
    expect(denied.status).toBe(400);
    expect(denied.body).toEqual({
      code: 400,
      message: "knowledge id is invalid or permissions are insufficient: kb_hr",
      data: null,
    });
    expect(denied.raw).not.toContain(B);
    const own = await searchAs(withKey(keys.a as string), ["kb_shared"]);
    expect(own.status).toBe(200);
    expect(own.body.data?.map((h) => h.text)).toEqual([APPLES]);
    expect(own.raw).not.toContain("4711");
    // b's key reaches b's own data only, under the same id.
    const theirs = await searchAs(withKey(keys.b as string), ["kb_shared", "kb_hr"]);
    expect(theirs.body.data?.map((h) => h.text).sort()).toEqual([SALARIES, VAULT].sort());
  });

  it("an Agent of a (the internal caller naming a) is checked like a's key", async () => {
    const denied = await searchAs(asAgentOf(A), ["kb_hr"]);
    expect(denied.body).toEqual({
      code: 400,
      message: "knowledge id is invalid or permissions are insufficient: kb_hr",
      data: null,
    });
    expect((await searchAs(asAgentOf(A), ["kb_shared"])).body.data?.map((h) => h.text)).toEqual([APPLES]);
    // Without a namespace the internal token reaches nothing.
    const bare = await searchAs({ authorization: `Bearer ${TOKEN}` }, ["kb_shared"]);
    expect(bare.status).toBe(400);
    // The operator resolves an Agent's knowledge in its own namespace too.
    await create(client, {
      apiVersion: CAP,
      kind: "Agent",
      metadata: { name: "assistant", namespace: A },
      spec: { knowledge: { knowledgeIds: ["kb_hr"] } },
    });
    const agent = await whenCondition(client, "Agent", A, "assistant", "KnowledgeResolved", "False");
    expect(condition(agent, "KnowledgeResolved")?.message).toBe("no KnowledgeBase with id kb_hr");
  });

  it("a second KnowledgeBase claiming an id of its namespace is refused and never writes into it", async () => {
    await create(client, kb(A, "copy", "kb_shared", "Copied text that must never be searchable."));
    const copy = await whenCondition(client, "KnowledgeBase", A, "copy", "Ready", "False");
    expect(condition(copy, "Ready")?.reason).toBe("DuplicateKnowledgeId");
    expect(condition(copy, "Ready")?.message).toContain("KnowledgeBase docs");
    await remove(client, CAP, "KnowledgeBase", A, "copy");
    await eventually("the duplicate gone", async () => !(await get(client, CAP, "KnowledgeBase", A, "copy")));
    // Its finalizer did not drop the owner's vectors.
    expect((await searchAs(withKey(keys.a as string), ["kb_shared"])).body.data?.map((h) => h.text)).toEqual([APPLES]);
  });

  it("deleting a's KnowledgeBase removes only a's vectors", async () => {
    await remove(client, CAP, "KnowledgeBase", A, "docs");
    await eventually("a's knowledge base gone", async () => !(await get(client, CAP, "KnowledgeBase", A, "docs")));
    await eventually("a's kb_shared unknown to search", async () => {
      const r = await searchAs(withKey(keys.a as string), ["kb_shared"]);
      return r.status === 400;
    });
    const theirs = await searchAs(withKey(keys.b as string), ["kb_shared"]);
    expect(theirs.status).toBe(200);
    expect(theirs.body.data?.map((h) => h.text)).toEqual([VAULT]);
  });
});
