import { hashKey, verifyingHash } from "@capstan/shared";
import type { AccessChannel, Agent, SearchKey } from "@capstan/shared/api";
import { describe, expect, it } from "vitest";
import { deriveAccessChannelStatus, deriveSearchKeyStatus, type KeyMaterial, rotationDue } from "./keys.ts";

const now = new Date("2026-06-01T12:00:00Z");
const key: KeyMaterial = { ok: true, value: "cap_chat_abcdefgh", secretName: "c-chat-key", source: "generated" };

function channel(spec: Partial<AccessChannel["spec"]> = {}, status?: AccessChannel["status"]): AccessChannel {
  return {
    apiVersion: "capstan.dev/v1alpha1",
    kind: "AccessChannel",
    metadata: { name: "c", namespace: "ns", generation: 3 },
    spec: { channelName: "C", agentRef: { name: "a" }, qpm: 100, keepHistory: false, ...spec },
    ...(status ? { status } : {}),
  };
}
const agent: Agent = {
  apiVersion: "capstan.dev/v1alpha1",
  kind: "Agent",
  metadata: { name: "a", namespace: "ns" },
  spec: {},
};

const VERIFIER = "operator-generated-verifier-key-0123456789";

describe("deriveAccessChannelStatus", () => {
  it("carries a user-supplied key only as an HMAC under the verifier key: no bare hash, no characters of it", () => {
    const supplied: KeyMaterial = { ok: true, value: "hunter2", secretName: "mine", source: "supplied" };
    const out = deriveAccessChannelStatus({
      channel: channel(),
      agent,
      key: supplied,
      verifierKey: VERIFIER,
      now,
      endpoint: "e",
    });
    expect(out.ready).toBe(true);
    expect(out.status.keyHash).toBe(verifyingHash("hunter2", VERIFIER));
    expect(out.status.keyHash).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(out.status.keyPrefix).toBeUndefined();
    const text = JSON.stringify(out.status);
    expect(text).not.toContain(hashKey("hunter2").slice("sha256:".length));
    expect(text).not.toContain("hunt");
    // Before the verifier key exists: not accepted yet, and still nothing of the key.
    const early = deriveAccessChannelStatus({ channel: channel(), agent, key: supplied, now, endpoint: "e" });
    expect(early.ready).toBe(false);
    expect(early.status.keyHash).toBeUndefined();
    expect(early.status.conditions?.find((c) => c.type === "KeyIssued")?.reason).toBe("KeyVerifierPending");
  });

  it("is Ready with hash, prefix, expiry and endpoint, and requeues at the expiry", () => {
    const out = deriveAccessChannelStatus({
      channel: channel({ expiresAt: "2026-06-01T13:00:00Z" }),
      agent,
      key,
      now,
      endpoint: "http://gw/api/v1",
    });
    expect(out.ready).toBe(true);
    expect(out.requeueAfterMs).toBe(3_600_000);
    expect(out.status).toMatchObject({
      observedGeneration: 3,
      keyHash: hashKey("cap_chat_abcdefgh"),
      keyPrefix: "cap_chat_abcd…",
      secretName: "c-chat-key",
      expiresAt: "2026-06-01T13:00:00Z",
      endpoint: "http://gw/api/v1",
      agent: "a",
    });
    expect(out.status.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ["Ready", "True", "Ready"],
      ["KeyIssued", "True", "KeyGenerated"],
      ["AgentFound", "True", "AgentFound"],
      ["Expired", "False", "NotExpired"],
    ]);
    expect(JSON.stringify(out.status)).not.toContain("cap_chat_abcdefgh");
  });

  it("a missing Agent: Ready=False AgentNotFound, key still issued", () => {
    const out = deriveAccessChannelStatus({ channel: channel(), agent: undefined, key, now, endpoint: "e" });
    expect(out.status.conditions?.[0]).toMatchObject({ type: "Ready", status: "False", reason: "AgentNotFound" });
    expect(out.status.keyHash).toBeDefined();
    expect(out.status.agent).toBeUndefined();
    expect(out.requeueAfterMs).toBeUndefined();
  });

  it("expired: Expired=True, Ready=False Expired, no requeue", () => {
    const out = deriveAccessChannelStatus({
      channel: channel({ expiresAt: "2026-06-01T12:00:00Z" }),
      agent,
      key,
      now,
      endpoint: "e",
    });
    expect(out.status.conditions?.find((c) => c.type === "Expired")).toMatchObject({
      status: "True",
      reason: "Expired",
    });
    expect(out.status.conditions?.[0]).toMatchObject({ status: "False", reason: "Expired" });
    expect(out.requeueAfterMs).toBeUndefined();
  });

  it("a missing key Secret is the first reason", () => {
    const missing: KeyMaterial = {
      ok: false,
      secretName: "s",
      reason: "SecretNotFound",
      message: "Secret s does not exist",
    };
    const out = deriveAccessChannelStatus({ channel: channel(), agent: undefined, key: missing, now, endpoint: "e" });
    expect(out.status.conditions?.[0]).toMatchObject({ status: "False", reason: "SecretNotFound" });
    expect(out.status.keyHash).toBeUndefined();
  });

  it("is a fixed point: recomputing from its own output changes nothing (zero writes on resync)", () => {
    const first = deriveAccessChannelStatus({ channel: channel(), agent, key, now, endpoint: "e" });
    const later = new Date(now.getTime() + 3_600_000);
    const second = deriveAccessChannelStatus({
      channel: channel({}, first.status),
      agent,
      key,
      now: later,
      endpoint: "e",
    });
    expect(second.status).toEqual(first.status);
  });

  it("keeps lastTransitionTime until a condition's status changes", () => {
    const first = deriveAccessChannelStatus({ channel: channel(), agent: undefined, key, now, endpoint: "e" });
    const later = new Date(now.getTime() + 60_000);
    const second = deriveAccessChannelStatus({
      channel: channel({}, first.status),
      agent,
      key,
      now: later,
      endpoint: "e",
    });
    const ready = second.status.conditions?.find((c) => c.type === "Ready");
    const issued = second.status.conditions?.find((c) => c.type === "KeyIssued");
    expect(ready?.lastTransitionTime).toBe("2026-06-01T12:01:00Z");
    expect(issued?.lastTransitionTime).toBe("2026-06-01T12:00:00Z");
  });
});

function searchKey(spec: Partial<SearchKey["spec"]> = {}, status?: SearchKey["status"]): SearchKey {
  return {
    apiVersion: "capstan.dev/v1alpha1",
    kind: "SearchKey",
    metadata: { name: "k", namespace: "ns", generation: 1, creationTimestamp: "2026-05-01T00:00:00Z" },
    spec: { keyName: "K", knowledgeIds: ["kb_a"], permissions: ["read"], requestsPerMinute: 600, ...spec },
    ...(status ? { status } : {}),
  };
}
const sKey = (value: string, issuedAt: string): KeyMaterial => ({
  ok: true,
  value,
  secretName: "k-search-key",
  source: "generated",
  issuedAt: new Date(issuedAt),
});

describe("deriveSearchKeyStatus", () => {
  it("valid from creation when validFrom is absent; requeues at validUntil", () => {
    const out = deriveSearchKeyStatus({
      searchKey: searchKey({ validUntil: "2026-06-02T12:00:00Z" }),
      key: sKey("cap_srch_x", "2026-05-01T00:00:00Z"),
      missingKnowledgeIds: [],
      now,
      endpoint: "e",
    });
    expect(out.ready).toBe(true);
    expect(out.status).toMatchObject({
      validFrom: "2026-05-01T00:00:00Z",
      expiresAt: "2026-06-02T12:00:00Z",
      rotatedAt: "2026-05-01T00:00:00Z",
    });
    expect(out.requeueAfterMs).toBe(86_400_000);
  });

  it("not yet valid: Ready=False NotYetValid and a requeue at validFrom", () => {
    const out = deriveSearchKeyStatus({
      searchKey: searchKey({ validFrom: "2026-06-01T12:30:00Z" }),
      key: sKey("cap_srch_x", "2026-05-01T00:00:00Z"),
      missingKnowledgeIds: [],
      now,
      endpoint: "e",
    });
    expect(out.status.conditions?.[0]).toMatchObject({ status: "False", reason: "NotYetValid" });
    expect(out.requeueAfterMs).toBe(1_800_000);
  });

  it("a scope with a missing knowledge base: ScopeResolved=False and Ready=False", () => {
    const out = deriveSearchKeyStatus({
      searchKey: searchKey(),
      key: sKey("cap_srch_x", "2026-05-01T00:00:00Z"),
      missingKnowledgeIds: ["kb_a"],
      now,
      endpoint: "e",
    });
    expect(out.status.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ["Ready", "False", "KnowledgeBaseNotFound"],
      ["KeyIssued", "True", "KeyGenerated"],
      ["ScopeResolved", "False", "KnowledgeBaseNotFound"],
      ["Expired", "False", "NoExpiry"],
    ]);
  });

  it("rotation: due after `every`; the old hash stays in previousKeys until the overlap ends", () => {
    const sk = searchKey({ rotation: { every: "720h", overlap: "24h" } });
    expect(rotationDue(sk, new Date("2026-05-01T12:00:00Z"), now)).toBe(true);
    expect(rotationDue(sk, new Date("2026-05-20T00:00:00Z"), now)).toBe(false);

    const before = deriveSearchKeyStatus({
      searchKey: sk,
      key: sKey("old", "2026-05-01T12:00:00Z"),
      missingKnowledgeIds: [],
      now,
      endpoint: "e",
    });
    const rotated = deriveSearchKeyStatus({
      searchKey: { ...sk, status: before.status },
      key: sKey("new", "2026-06-01T12:00:00Z"),
      missingKnowledgeIds: [],
      now,
      endpoint: "e",
    });
    expect(rotated.status.keyHash).toBe(hashKey("new"));
    expect(rotated.status.previousKeys).toEqual([{ keyHash: hashKey("old"), validUntil: "2026-06-02T12:00:00Z" }]);
    expect(rotated.requeueAfterMs).toBe(86_400_000); // the end of the overlap comes first
    const during = deriveSearchKeyStatus({
      searchKey: { ...sk, status: rotated.status },
      key: sKey("new", "2026-06-01T12:00:00Z"),
      missingKnowledgeIds: [],
      now: new Date("2026-06-02T11:59:59Z"),
      endpoint: "e",
    });
    expect(during.status.previousKeys).toHaveLength(1);
    const after = deriveSearchKeyStatus({
      searchKey: { ...sk, status: during.status },
      key: sKey("new", "2026-06-01T12:00:00Z"),
      missingKnowledgeIds: [],
      now: new Date("2026-06-02T12:00:00Z"),
      endpoint: "e",
    });
    expect(after.status.previousKeys).toBeUndefined();
    expect(after.requeueAfterMs).toBe(29 * 86_400_000);
  });

  it("a key changed without rotation configured keeps no previous hash", () => {
    const sk = searchKey({ keySecretRef: { name: "mine", key: "k" } });
    const a = deriveSearchKeyStatus({
      searchKey: sk,
      key: { ok: true, value: "one", secretName: "mine", source: "supplied" },
      verifierKey: VERIFIER,
      missingKnowledgeIds: [],
      now,
      endpoint: "e",
    });
    const b = deriveSearchKeyStatus({
      searchKey: { ...sk, status: a.status },
      key: { ok: true, value: "two", secretName: "mine", source: "supplied" },
      verifierKey: VERIFIER,
      missingKnowledgeIds: [],
      now,
      endpoint: "e",
    });
    expect(b.status.previousKeys).toBeUndefined();
    expect(b.status.keyHash).toBe(verifyingHash("two", VERIFIER));
  });
});
