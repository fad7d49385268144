// The operator against the real test API server, beside the objects of examples/: bad references
// and expiry flip conditions, rotation overlaps keys, finalizers and owner references clean up
// (what the examples themselves become: operator.test.ts).
import { createHash } from "node:crypto";
import { verifyingHash } from "@capstan/shared";
import { beforeAll, describe, expect, it } from "vitest";
import type { TestKube } from "../ground/kube-client.ts";
import { CAP, condition, create, eventually, get, list, type Obj, remove, whenCondition } from "./helpers.ts";
import { decode, operatorWithExamples } from "./operator-fixture.ts";

const fixture = operatorWithExamples("oplife");
const { ns, search } = fixture;
let client: TestKube;
beforeAll(() => {
  client = fixture.client;
});

describe("conditions", () => {
  it("a missing Agent makes the channel Ready=False with AgentNotFound, and creating it fixes that", async () => {
    await create(client, {
      apiVersion: CAP,
      kind: "AccessChannel",
      metadata: { name: "orphan", namespace: ns },
      spec: { channelName: "Orphan", agentRef: { name: "later" } },
    });
    const ch = await whenCondition(client, "AccessChannel", ns, "orphan", "Ready", "False", "AgentNotFound");
    expect(condition(ch, "Ready")?.message).toContain("later");
    expect(ch.status?.keyHash).toMatch(/^sha256:/);
    await create(client, {
      apiVersion: CAP,
      kind: "Agent",
      metadata: { name: "later", namespace: ns },
      spec: { provider: { baseURL: "https://llm.example/v1", model: "m" } },
    });
    await whenCondition(client, "AccessChannel", ns, "orphan", "Ready", "True");
  });

  it("expiry flips Expired and Ready on time", async () => {
    const at = new Date(Date.now() + 10_000).toISOString().replace(/\.\d{3}Z$/, "Z");
    await create(client, {
      apiVersion: CAP,
      kind: "AccessChannel",
      metadata: { name: "short", namespace: ns },
      spec: { channelName: "Short", agentRef: { name: "later" }, expiresAt: at },
    });
    const before = await whenCondition(client, "AccessChannel", ns, "short", "Ready", "True");
    expect(condition(before, "Expired")?.status).toBe("False");
    const after = await whenCondition(client, "AccessChannel", ns, "short", "Expired", "True", "Expired");
    expect(condition(after, "Ready")).toMatchObject({ status: "False", reason: "Expired" });
  });

  it("a user-supplied key is in status only as an HMAC under the operator's verifier key; a missing Secret is reported", async () => {
    await create(client, {
      apiVersion: CAP,
      kind: "AccessChannel",
      metadata: { name: "byok", namespace: ns },
      spec: { channelName: "BYOK", agentRef: { name: "later" }, keySecretRef: { name: "my-key", key: "value" } },
    });
    await whenCondition(client, "AccessChannel", ns, "byok", "Ready", "False", "SecretNotFound");
    await create(client, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "my-key", namespace: ns },
      data: { value: Buffer.from("my-own-secret-key").toString("base64") },
    });
    const ch = await whenCondition(client, "AccessChannel", ns, "byok", "Ready", "True");
    // The operator generated the verifier key into its namespace; status carries nothing a reader of
    // the resource could test guesses against: no bare hash, no characters of the key.
    const verifier = await get(client, "v1", "Secret", ns, "capstan-key-verifier");
    const verifierKey = Buffer.from(verifier?.data?.key ?? "", "base64").toString("utf8");
    expect(verifierKey.length).toBeGreaterThanOrEqual(32);
    expect(ch.status?.keyHash).toBe(verifyingHash("my-own-secret-key", verifierKey));
    const status = JSON.stringify(ch.status);
    expect(status).not.toContain(createHash("sha256").update("my-own-secret-key").digest("hex"));
    expect(status).not.toContain("my-o");
    expect(ch.status?.keyPrefix).toBeUndefined();
    expect(condition(ch, "KeyIssued")?.reason).toBe("KeySupplied");
  });

  it("a SearchKey scoped to a missing knowledge base is not Ready (KnowledgeBaseNotFound)", async () => {
    await create(client, {
      apiVersion: CAP,
      kind: "SearchKey",
      metadata: { name: "scoped", namespace: ns },
      spec: { keyName: "Scoped", knowledgeIds: ["kb_product_docs", "kb_nowhere"] },
    });
    const sk = await whenCondition(client, "SearchKey", ns, "scoped", "Ready", "False", "KnowledgeBaseNotFound");
    expect(condition(sk, "ScopeResolved")?.message).toContain("kb_nowhere");
  });

  it("an Agent referencing a missing provider key Secret is not Ready", async () => {
    await create(client, {
      apiVersion: CAP,
      kind: "Agent",
      metadata: { name: "nokey", namespace: ns },
      spec: {
        provider: { baseURL: "https://llm.example/v1", model: "m", apiKeySecretRef: { name: "llm", key: "apiKey" } },
      },
    });
    await whenCondition(client, "Agent", ns, "nokey", "Ready", "False", "SecretNotFound");
    await create(client, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "llm", namespace: ns },
      data: { apiKey: Buffer.from("sk-test").toString("base64") },
    });
    const agent = await whenCondition(client, "Agent", ns, "nokey", "Ready", "True");
    expect(agent.status?.mode).toBe("llm");
    // The gateway gets the provider key through the mirror Secret, mounted at <dir>/<ns>/<secret>/<key>.
    const gw = await eventually("gateway mounts the provider key", async () => {
      const d = await get(client, "apps/v1", "Deployment", ns, "capstan-gateway");
      return JSON.stringify(d?.spec).includes(`${ns}/llm/apiKey`) ? d : undefined;
    });
    expect(JSON.stringify(gw.spec)).toContain("/var/run/capstan/secrets");
    const mirror = (await get(client, "v1", "Secret", ns, "capstan-provider-keys")) as Obj;
    expect(Object.values(mirror.data ?? {}).map(decode)).toEqual(["sk-test"]);
  });
});

describe("rotation", () => {
  it("keeps the previous key valid during the overlap and only the new one after", async () => {
    await create(client, {
      apiVersion: CAP,
      kind: "SearchKey",
      metadata: { name: "rotating", namespace: ns },
      spec: { keyName: "Rotating", knowledgeIds: ["kb_product_docs"], rotation: { every: "12s", overlap: "3s" } },
    });
    const first = await whenCondition(client, "SearchKey", ns, "rotating", "Ready", "True");
    const h1 = first.status?.keyHash as string;
    const rotated = await eventually("rotation", async () => {
      const o = await get(client, CAP, "SearchKey", ns, "rotating");
      return o?.status?.keyHash !== h1 ? o : undefined;
    });
    const st = rotated?.status as {
      keyHash: string;
      rotatedAt: string;
      previousKeys?: { keyHash: string; validUntil: string }[];
    };
    expect(st.previousKeys).toEqual([
      { keyHash: h1, validUntil: new Date(Date.parse(st.rotatedAt) + 3000).toISOString().replace(/\.\d{3}Z$/, "Z") },
    ]);
    const secret = (await get(client, "v1", "Secret", ns, "rotating-search-key")) as Obj;
    expect(`sha256:${createHash("sha256").update(decode(secret.data?.key)).digest("hex")}`).toBe(st.keyHash);
    const after = await eventually("overlap end", async () => {
      const o = await get(client, CAP, "SearchKey", ns, "rotating");
      const s = o?.status as typeof st;
      return s.keyHash !== h1 && !(s.previousKeys ?? []).some((p) => p.keyHash === h1) ? s : undefined;
    });
    expect(after.keyHash).not.toBe(h1);
    await remove(client, CAP, "SearchKey", ns, "rotating"); // it would keep rotating (and writing)
  });
});

describe("deletion", () => {
  it("a KnowledgeBase's finalizer removes its collection before the object goes", async () => {
    await create(client, {
      apiVersion: CAP,
      kind: "KnowledgeBase",
      metadata: { name: "temp-kb", namespace: ns },
      spec: { sources: [{ name: "one", text: "hello world" }] },
    });
    await whenCondition(client, "KnowledgeBase", ns, "temp-kb", "Ready", "True");
    expect(search.kbs.has(`${ns}.kb_temp_kb`)).toBe(true);
    await remove(client, CAP, "KnowledgeBase", ns, "temp-kb");
    await eventually(
      "KnowledgeBase gone",
      async () => (await get(client, CAP, "KnowledgeBase", ns, "temp-kb")) === undefined,
    );
    expect(search.deleted).toContain(`${ns}.kb_temp_kb`);
    expect(search.kbs.has(`${ns}.kb_temp_kb`)).toBe(false);
  });

  it("dependents carry the owner reference the garbage collector follows", async () => {
    const secrets = await list(client, "v1", "Secret", ns);
    const owned = secrets.filter((s) => s.metadata.labels?.["capstan.dev/owner-kind"]);
    expect(owned.length).toBeGreaterThanOrEqual(4);
    for (const s of owned) {
      const ref = s.metadata.ownerReferences?.[0];
      const owner = await get(client, CAP, ref?.kind as string, ns, ref?.name as string);
      // The test API server runs no garbage collector: the deleted SearchKey's Secret waits for it.
      if (ref?.name === "rotating") expect(owner).toBeUndefined();
      else expect(owner?.metadata.uid).toBe(ref?.uid);
      expect(ref).toMatchObject({ controller: true, blockOwnerDeletion: true });
    }
  });
});
