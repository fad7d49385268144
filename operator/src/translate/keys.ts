// Pure status computation of the two key kinds. The reconcilers gather facts (the resource, the
// key in its Secret, the Agent or knowledge bases it refers to, the time); these functions turn
// them into the status to write and when to look again (expiry, validity start, rotation, the end
// of a rotation overlap). Same facts in, same status out: that is what makes resyncs write nothing.

import { displayPrefix, hashKey, verifyingHash } from "@capstan/shared";
import type { AccessChannel, AccessChannelStatus, Agent, SearchKey, SearchKeyStatus } from "@capstan/shared/api";
import { type ConditionInput, compact, findCondition, kubeTime, setConditions } from "../controller/conditions.ts";
import { knowledgeFound } from "./common.ts";
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

/** Expired: True once the key's end has passed; else when it ends (`until` words it), or that it never does. */
function expiryCondition(end: string | undefined, expired: boolean, until: string): ConditionInput {
  return expired
    ? { type: "Expired", status: "True", reason: "Expired", message: `the key expired at ${end}` }
    : {
        type: "Expired",
        status: "False",
        reason: end ? "NotExpired" : "NoExpiry",
        message: end ? `${until} ${end}` : "the key does not expire",
      };
}

export function deriveAccessChannelStatus(f: {
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
  const expiredCondition = expiryCondition(channel.spec.expiresAt, expired, "the key expires at");
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

export function deriveSearchKeyStatus(f: {
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
  const valid = validity(sk, now);
  const issuedAt = key.ok ? key.issuedAt : undefined;
  const previous = overlappingKeys(sk, newHash, issuedAt, now);
  const missing = f.missingKnowledgeIds;
  const scope = knowledgeFound("ScopeResolved", "scope", spec.knowledgeIds, missing);
  const expiredCondition = expiryCondition(spec.validUntil, valid.expired, "the key is valid until");
  const keyCheck = keyCondition(key);
  const conditions = setConditions(
    sk.status?.conditions,
    [
      readyFrom([
        { ok: key.ok, reason: keyCheck.reason, message: keyCheck.message },
        { ok: !valid.notYet, reason: "NotYetValid", message: `the key is valid from ${valid.fromText}` },
        { ok: !valid.expired, reason: "Expired", message: expiredCondition.message },
        { ok: missing.length === 0, reason: "KnowledgeBaseNotFound", message: scope.message },
      ]),
      keyCheck,
      scope,
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
    validFrom: valid.fromText,
    rotatedAt: issuedAt ? kubeTime(issuedAt) : undefined,
    previousKeys: previous.length ? previous : undefined,
  });
  const requeueAfterMs = searchKeyRequeue(sk, valid, issuedAt, previous, now);
  return {
    status,
    ready: conditions[0]?.status === "True",
    ...(requeueAfterMs !== undefined ? { requeueAfterMs } : {}),
  };
}

/** A search key's window: from validFrom (default: its creation) until validUntil (default: none). */
interface Validity {
  fromText: string | undefined;
  from: Date | undefined;
  until: Date | undefined;
  notYet: boolean;
  expired: boolean;
}

function validity(sk: SearchKey, now: Date): Validity {
  const fromText = sk.spec.validFrom ?? sk.metadata.creationTimestamp;
  const from = fromText ? new Date(fromText) : undefined;
  const until = sk.spec.validUntil ? new Date(sk.spec.validUntil) : undefined;
  return {
    fromText,
    from,
    until,
    notYet: from !== undefined && now < from,
    expired: until !== undefined && now >= until,
  };
}

/**
 * Hashes kept valid through a rotation overlap: earlier ones still in their window, plus the
 * hash status carried until now when the key in the Secret has changed since.
 */
function overlappingKeys(sk: SearchKey, newHash: string | undefined, issuedAt: Date | undefined, now: Date) {
  const overlapMs = sk.spec.rotation ? parseDuration(sk.spec.rotation.overlap) : 0;
  let previous = (sk.status?.previousKeys ?? []).filter((p) => new Date(p.validUntil) > now && p.keyHash !== newHash);
  const oldHash = sk.status?.keyHash;
  if (newHash && oldHash && oldHash !== newHash && overlapMs > 0) {
    const until = new Date((issuedAt ?? now).getTime() + overlapMs);
    if (until > now && !previous.some((p) => p.keyHash === oldHash)) {
      previous = [...previous, { keyHash: oldHash, validUntil: kubeTime(until) }];
    }
  }
  return previous;
}

/**
 * When a search key's status changes by itself next: its window opens or closes, its key is due
 * for rotation, or a previous key's overlap ends.
 */
function searchKeyRequeue(
  sk: SearchKey,
  valid: Validity,
  issuedAt: Date | undefined,
  previous: { validUntil: string }[],
  now: Date,
): number | undefined {
  const rotation = sk.spec.rotation;
  const nextRotation =
    rotation && issuedAt ? issuedAt.getTime() + parseDuration(rotation.every) - now.getTime() : undefined;
  return minPositive(
    valid.until && !valid.expired ? valid.until.getTime() - now.getTime() : undefined,
    valid.from && valid.notYet ? valid.from.getTime() - now.getTime() : undefined,
    valid.expired ? undefined : nextRotation,
    ...previous.map((p) => new Date(p.validUntil).getTime() - now.getTime()),
  );
}
