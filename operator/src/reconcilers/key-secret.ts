// Keys live in Secrets: a generated key in a Secret owned by its resource (garbage-collected
// with it), created once and never overwritten except by a rotation; or a user-supplied key
// the operator only reads and hashes. Plaintext never leaves the Secret except as a hash.
import { generateKey, type KeyKind } from "@capstan/shared";
import { controllerRef, isStatus, type KubeObject, type ResourceType, SECRET } from "@capstan/shared/kube";
import { kubeTime } from "../controller/conditions.ts";
import type { ObjectClient } from "../kube/client.ts";
import { ISSUED_AT, PART_OF } from "../translate/common.ts";
import type { KeyMaterial } from "../translate/keys.ts";
import { KEY_VERIFIER_KEY } from "../translate/workloads.ts";
import type { OperatorContext } from "./context.ts";

export const KEY_DATA = "key";

/**
 * How soon a resource naming a Secret that is missing (or lacks its key) is reconciled again: the
 * operator does not watch Secrets it does not own, so it looks again instead of waiting for an event.
 */
export const MISSING_SECRET_RETRY_MS = 10_000;

/** The requeue of a reconcile: the sooner of `afterMs` and, when a named Secret is missing, the retry. */
export function withSecretRetry(afterMs: number | undefined, secretMissing: boolean): number | undefined {
  if (!secretMissing) return afterMs;
  return Math.min(afterMs ?? MISSING_SECRET_RETRY_MS, MISSING_SECRET_RETRY_MS);
}

/**
 * The HMAC key under which status carries user-supplied keys: the key-verifier Secret the platform
 * reconciler generates in the operator's namespace (cached with its data: the operator owns it).
 */
export function verifierKeyOf(ctx: OperatorContext): string | undefined {
  const s = ctx.informers.secrets.get(ctx.config.namespace, ctx.config.keyVerifierSecret) as
    | (KubeObject & { data?: Record<string, string> })
    | undefined;
  return decode(s?.data?.[KEY_VERIFIER_KEY]);
}

function decode(b64: string | undefined): string | undefined {
  if (b64 === undefined) return undefined;
  const v = Buffer.from(b64, "base64").toString("utf8").trim();
  return v.length ? v : undefined;
}

/** A user-supplied key: read live (unmanaged Secrets are cached without data). */
export async function suppliedKey(
  client: ObjectClient,
  namespace: string,
  ref: { name: string; key: string },
): Promise<KeyMaterial> {
  const secret = await client.get<KubeObject & { data?: Record<string, string> }>(SECRET, namespace, ref.name);
  if (!secret)
    return { ok: false, secretName: ref.name, reason: "SecretNotFound", message: `Secret ${ref.name} does not exist` };
  const value = decode(secret.data?.[ref.key]);
  if (!value)
    return {
      ok: false,
      secretName: ref.name,
      reason: "KeyNotFound",
      message: `Secret ${ref.name} has no key ${ref.key}`,
    };
  return { ok: true, value, secretName: ref.name, source: "supplied" };
}

function keySecret(owner: KubeObject, type: ResourceType, name: string, key: string, issuedAt: Date): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name,
      namespace: owner.metadata.namespace as string,
      labels: { ...PART_OF, "capstan.dev/owner-kind": type.kind, "capstan.dev/owner-name": owner.metadata.name },
      annotations: { [ISSUED_AT]: kubeTime(issuedAt) },
      ownerReferences: [controllerRef(owner, type)],
    },
    type: "Opaque",
    data: { [KEY_DATA]: Buffer.from(key).toString("base64") },
  };
}

function material(secret: KubeObject & { data?: Record<string, string> }): KeyMaterial {
  const value = decode(secret.data?.[KEY_DATA]);
  const name = secret.metadata.name;
  if (!value) return { ok: false, secretName: name, reason: "KeyNotFound", message: `Secret ${name} has no key` };
  const at = secret.metadata.annotations?.[ISSUED_AT] ?? secret.metadata.creationTimestamp;
  return { ok: true, value, secretName: name, source: "generated", ...(at ? { issuedAt: new Date(at) } : {}) };
}

export interface GeneratedKeyResult {
  key: KeyMaterial;
  /** A key was created or rotated in this call. */
  issued: boolean;
}

/** A Secret of that name exists and another object (or a user) owns it: it is never taken over. */
function notOurs(name: string, type: ResourceType): GeneratedKeyResult {
  const message = `Secret ${name} exists and is not owned by this ${type.kind}`;
  return { key: { ok: false, secretName: name, reason: "SecretConflict", message }, issued: false };
}

/**
 * The generated key of `owner` in Secret `name`: read live (the operator caches only the Secrets
 * of its own namespace; elsewhere it may get, not list), created when absent,
 * replaced when `rotate` says so (optimistic locking: a concurrent writer makes this fail and
 * the reconcile is retried, so two keys are never issued at once).
 */
export async function generatedKey(opts: {
  client: ObjectClient;
  owner: KubeObject;
  type: ResourceType;
  name: string;
  kind: KeyKind;
  now: Date;
  rotate?: (current: KeyMaterial) => boolean;
}): Promise<GeneratedKeyResult> {
  const { client, owner, type, name } = opts;
  const ns = owner.metadata.namespace as string;
  let secret = await client.get<KubeObject & { data?: Record<string, string> }>(SECRET, ns, name);
  if (secret) {
    const ref = secret.metadata.ownerReferences?.find((r) => r.controller);
    if (!ref || ref.kind !== type.kind || ref.name !== owner.metadata.name) {
      return notOurs(name, type);
    }
    if (ref.uid !== owner.metadata.uid) {
      // Left over from an earlier object of the same name (garbage collection pending): never reuse its key.
      await client.delete(SECRET, ns, name);
      secret = undefined;
    }
  }
  if (secret) {
    const current = material(secret);
    if (!opts.rotate?.(current) && current.ok) return { key: current, issued: false };
    const value = generateKey(opts.kind);
    const next = keySecret(owner, type, name, value, opts.now);
    next.metadata.resourceVersion = secret.metadata.resourceVersion;
    await client.replace(SECRET, next);
    return { key: material(next), issued: true };
  }
  const value = generateKey(opts.kind);
  const fresh = keySecret(owner, type, name, value, opts.now);
  try {
    await client.create(SECRET, fresh);
    return { key: material(fresh), issued: true };
  } catch (err) {
    if (!isStatus(err, 409)) throw err;
    // Created meanwhile (the cache lags behind our own write): use what is there.
    const live = await client.get<KubeObject & { data?: Record<string, string> }>(SECRET, ns, name);
    if (!live) throw err;
    const ref = live.metadata.ownerReferences?.find((r) => r.controller);
    if (ref?.uid !== owner.metadata.uid) {
      return notOurs(name, type);
    }
    return { key: material(live), issued: false };
  }
}

/**
 * The key of an AccessChannel or SearchKey: the user's own Secret when the spec names one (read
 * only, never issued by us), else the generated key in Secret `name` (generatedKey).
 */
export async function objectKey(
  opts: Parameters<typeof generatedKey>[0] & { keySecretRef: { name: string; key: string } | undefined },
): Promise<GeneratedKeyResult> {
  if (!opts.keySecretRef) return generatedKey(opts);
  const key = await suppliedKey(opts.client, opts.owner.metadata.namespace as string, opts.keySecretRef);
  return { key, issued: false };
}
