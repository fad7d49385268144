// Pure status computation of the two key kinds. The reconcilers gather facts (the resource, the
// key in its Secret, the Agent or knowledge bases it refers to, the time); these functions turn
// them into the status to write and when to look again (expiry, validity start, rotation, the end
// of a rotation overlap). Same facts in, same status out: that is what makes resyncs write nothing.

import { displayPrefix, hashKey, verifyingHash } from "@capstan/shared";
import type { AccessChannel, AccessChannelStatus, Agent, SearchKey, SearchKeyStatus } from "@capstan/shared/api";
import { type ConditionInput, compact, findCondition, kubeTime, setConditions } from "../controller/conditions.ts";
import { parseDuration } from "./duration.ts";

/** The key behind a resource, as found in its Secret. */
export type KeyMaterial =
  | { ok: true; value: string; secretName: string; source: "generated" | "supplied"; issuedAt?: Date }
  | { ok: false; secretName?: string; reason: string; message: string };

export interface KeyOutcome<S> {
  status: S;
  ready: boolean;
  /** Milliseconds until the status would change by itself (expiry, validity start, rotation). */
  requeueAfterMs?: number;
}

/**
 * What status carries to match a key. A generated key (256 random bits) by its SHA-256 and a
 * display prefix. A user-supplied key may be a guessable word, and a bare hash in status could be
 * tested offline by anyone who may read the resource: it is carried only as an HMAC under the
 * operator's verifier key (which only the data plane holds), and with no prefix. Until the
 * verifier key exists a supplied key is not accepted (KeyVerifierPending).
 */
function verified(
  key: KeyMaterial,
  verifierKey: string | undefined,
): { key: KeyMaterial; hash?: string; prefix?: string } {
  if (!key.ok) return { key };
  if (key.source === "generated") return { key, hash: hashKey(key.value), prefix: displayPrefix(key.value) };
  if (!verifierKey)
    return {
      key: {
        ok: false,
        secretName: key.secretName,
        reason: "KeyVerifierPending",
        message: "waiting for the key-verifier Secret the operator generates in its namespace",
      },
    };
  return { key, hash: verifyingHash(key.value, verifierKey) };
}

function readyFrom(checks: { ok: boolean; reason: string; message: string }[]): ConditionInput {
  const bad = checks.find((c) => !c.ok);
  return bad
    ? { type: "Ready", status: "False", reason: bad.reason, message: bad.message }
    : { type: "Ready", status: "True", reason: "Ready", message: "the key is issued and accepted" };
}

function keyCondition(key: KeyMaterial): ConditionInput {
  return key.ok
    ? {
        type: "KeyIssued",
        status: "True",
        reason: key.source === "generated" ? "KeyGenerated" : "KeySupplied",
        message: `key held in Secret ${key.secretName}`,
      }
    : { type: "KeyIssued", status: "False", reason: key.reason, message: key.message };
}

function minPositive(...ms: (number | undefined)[]): number | undefined {
  const v = ms.filter((x): x is number => x !== undefined && x > 0);
  return v.length ? Math.min(...v) : undefined;
}

export function accessChannelStatus(f: {
  channel: AccessChannel;
  agent: Agent | undefined;
  key: KeyMaterial;
  /** The HMAC key of user-supplied keys (the operator's key-verifier Secret); undefined until it exists. */
  verifierKey?: string | undefined;
  now: Date;
  endpoint: string;
  /** The budget's spend and BudgetWarning condition (translate/usage.ts), for a channel with a budget. */
  budget?: { budget: AccessChannelStatus["budget"]; condition: ConditionInput | undefined };
}): KeyOutcome<AccessChannelStatus> {
  const { channel, agent, now } = f;
  const { key, hash, prefix } = verified(f.key, f.verifierKey);
  const expiresAt = channel.spec.expiresAt ? new Date(channel.spec.expiresAt) : undefined;
  const expired = expiresAt !== undefined && now >= expiresAt;
  const agentName = channel.spec.agentRef.name;
  const agentReady = agent ? findCondition(agent.status?.conditions, "Ready") : undefined;
  const agentCheck = !agent
    ? {
        ok: false,
        reason: "AgentNotFound",
        message: `Agent ${agentName} does not exist in namespace ${channel.metadata.namespace}`,
      }
    : agentReady?.status === "False"
      ? { ok: false, reason: "AgentNotReady", message: `Agent ${agentName} is not ready: ${agentReady.message}` }
      : { ok: true, reason: "AgentFound", message: `Agent ${agentName} found` };
  const expiredCondition: ConditionInput = expired
    ? { type: "Expired", status: "True", reason: "Expired", message: `the key expired at ${channel.spec.expiresAt}` }
    : {
        type: "Expired",
        status: "False",
        reason: expiresAt ? "NotExpired" : "NoExpiry",
        message: expiresAt ? `the key expires at ${channel.spec.expiresAt}` : "the key does not expire",
      };
  const keyCheck = keyCondition(key);
  const conditions = setConditions(
    channel.status?.conditions,
    [
      readyFrom([
        { ok: key.ok, reason: keyCheck.reason, message: keyCheck.message },
        agentCheck,
        { ok: !expired, reason: "Expired", message: expiredCondition.message },
      ]),
      keyCheck,
      {
        type: "AgentFound",
        status: agent ? "True" : "False",
        reason: agent ? "AgentFound" : "AgentNotFound",
        message: agentCheck.message,
      },
      expiredCondition,
      ...(f.budget?.condition ? [f.budget.condition] : []),
    ],
    channel.metadata.generation,
    now,
  );
  const status: AccessChannelStatus = compact({
    observedGeneration: channel.metadata.generation,
    conditions,
    keyHash: hash,
    keyPrefix: prefix,
    secretName: key.secretName,
    expiresAt: channel.spec.expiresAt,
    endpoint: f.endpoint,
    agent: agent ? agentName : undefined,
    budget: f.budget?.budget,
  });
  return {
    status,
    ready: conditions[0]?.status === "True",
    ...(expiresAt && !expired ? { requeueAfterMs: expiresAt.getTime() - now.getTime() } : {}),
  };
}

/** Whether a generated, rotating key is due for a new one. */
export function rotationDue(key: SearchKey, issuedAt: Date | undefined, now: Date): boolean {
  if (!key.spec.rotation || !issuedAt) return false;
  return now.getTime() >= issuedAt.getTime() + parseDuration(key.spec.rotation.every);
}

export function searchKeyStatus(f: {
  searchKey: SearchKey;
  key: KeyMaterial;
  missingKnowledgeIds: string[];
  /** The HMAC key of user-supplied keys (the operator's key-verifier Secret); undefined until it exists. */
  verifierKey?: string | undefined;
  now: Date;
  endpoint: string;
}): KeyOutcome<SearchKeyStatus> {
  const { searchKey: sk, now } = f;
  const { key, hash: newHash, prefix } = verified(f.key, f.verifierKey);
  const spec = sk.spec;
  const validFromText = spec.validFrom ?? sk.metadata.creationTimestamp;
  const validFrom = validFromText ? new Date(validFromText) : undefined;
  const validUntil = spec.validUntil ? new Date(spec.validUntil) : undefined;
  const notYet = validFrom !== undefined && now < validFrom;
  const expired = validUntil !== undefined && now >= validUntil;
  const issuedAt = key.ok ? key.issuedAt : undefined;

  // Hashes kept valid through a rotation overlap: earlier ones still in their window, plus the
  // hash status carried until now when the key in the Secret has changed since.
  const overlapMs = spec.rotation ? parseDuration(spec.rotation.overlap) : 0;
  let previous = (sk.status?.previousKeys ?? []).filter((p) => new Date(p.validUntil) > now && p.keyHash !== newHash);
  const oldHash = sk.status?.keyHash;
  if (newHash && oldHash && oldHash !== newHash && overlapMs > 0) {
    const until = new Date((issuedAt ?? now).getTime() + overlapMs);
    if (until > now && !previous.some((p) => p.keyHash === oldHash)) {
      previous = [...previous, { keyHash: oldHash, validUntil: kubeTime(until) }];
    }
  }

  const missing = f.missingKnowledgeIds;
  const scopeCondition: ConditionInput =
    missing.length === 0
      ? {
          type: "ScopeResolved",
          status: "True",
          reason: "KnowledgeBasesFound",
          message: `scope: ${spec.knowledgeIds.join(", ")}`,
        }
      : {
          type: "ScopeResolved",
          status: "False",
          reason: "KnowledgeBaseNotFound",
          message: `no KnowledgeBase with id ${missing.join(", ")}`,
        };
  const expiredCondition: ConditionInput = expired
    ? { type: "Expired", status: "True", reason: "Expired", message: `the key expired at ${spec.validUntil}` }
    : {
        type: "Expired",
        status: "False",
        reason: validUntil ? "NotExpired" : "NoExpiry",
        message: validUntil ? `the key is valid until ${spec.validUntil}` : "the key does not expire",
      };
  const keyCheck = keyCondition(key);
  const conditions = setConditions(
    sk.status?.conditions,
    [
      readyFrom([
        { ok: key.ok, reason: keyCheck.reason, message: keyCheck.message },
        { ok: !notYet, reason: "NotYetValid", message: `the key is valid from ${validFromText}` },
        { ok: !expired, reason: "Expired", message: expiredCondition.message },
        { ok: missing.length === 0, reason: "KnowledgeBaseNotFound", message: scopeCondition.message },
      ]),
      keyCheck,
      scopeCondition,
      expiredCondition,
    ],
    sk.metadata.generation,
    now,
  );
  const status: SearchKeyStatus = compact({
    observedGeneration: sk.metadata.generation,
    conditions,
    keyHash: newHash,
    keyPrefix: prefix,
    secretName: key.secretName,
    expiresAt: spec.validUntil,
    endpoint: f.endpoint,
    validFrom: validFromText,
    rotatedAt: issuedAt ? kubeTime(issuedAt) : undefined,
    previousKeys: previous.length ? previous : undefined,
  });
  const nextRotation =
    spec.rotation && issuedAt ? issuedAt.getTime() + parseDuration(spec.rotation.every) - now.getTime() : undefined;
  const requeueAfterMs = minPositive(
    validUntil && !expired ? validUntil.getTime() - now.getTime() : undefined,
    validFrom && notYet ? validFrom.getTime() - now.getTime() : undefined,
    expired ? undefined : nextRotation,
    ...previous.map((p) => new Date(p.validUntil).getTime() - now.getTime()),
  );
  return {
    status,
    ready: conditions[0]?.status === "True",
    ...(requeueAfterMs !== undefined ? { requeueAfterMs } : {}),
  };
}
