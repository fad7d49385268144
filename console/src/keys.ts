// Showing a key once, and issuing a new one, the way keys are issued everywhere in Capstan: the
// operator generates every key into the resource's Secret (`<name>-chat-key`, `<name>-search-key`)
// and publishes its hash in status; the console never makes a key of its own. It reads the
// Secret with the user's token to show the key, and records the hash it showed in an annotation,
// so "Add key" shows a key once and afterwards offers "Rotate key". A rotation deletes the Secret
// and touches the resource: the operator, reconciling it, finds no Secret and issues a new key
// (for a SearchKey with spec.rotation the old hash stays valid for the rotation overlap).
import { hashKey } from "@capstan/shared";
import { isStatus } from "@capstan/shared/kube";
import { errors } from "./errors.ts";
import type { ConsoleApi, KubeObject } from "./user-api.ts";

/** The hash of the key the console last showed (never the key). */
export const REVEALED_ANNOTATION = "console.capstan.dev/revealed-key-hash";
/** Written on rotation so the operator reconciles the resource at once. */
export const KEY_REQUESTED_ANNOTATION = "console.capstan.dev/key-requested-at";

export interface KeyStatus {
  keyHash?: string;
  keyPrefix?: string;
  secretName?: string;
  endpoint?: string;
}

export interface RevealedKey {
  key: string;
  keyPrefix: string;
  endpoint: string | undefined;
}

const statusOf = (o: KubeObject) => (o.status ?? {}) as KeyStatus;

/** Whether the console has already shown the key this resource holds now. */
export function keyRevealed(o: KubeObject): boolean {
  const hash = statusOf(o).keyHash;
  return hash !== undefined && o.metadata.annotations?.[REVEALED_ANNOTATION] === hash;
}

async function until<T>(what: () => Promise<T | undefined>, deadline: number): Promise<T | undefined> {
  for (;;) {
    const v = await what();
    if (v !== undefined || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * "Add key" (rotate false: shows the current key, or issues a new one if it was already shown) and
 * "Rotate key" (rotate true). Every call is made with the user's token, so RBAC decides: showing
 * needs `get` on Secrets, issuing needs `delete` on Secrets and `patch` on the resource.
 */
export async function issueOrReveal(
  api: ConsoleApi,
  plural: "accesschannels" | "searchkeys",
  ns: string,
  name: string,
  opts: { rotate: boolean; waitSeconds: number; secretSuffix: string },
): Promise<RevealedKey> {
  const obj = await api.get(plural, ns, name);
  const supplied = (obj.spec?.keySecretRef as { name?: string } | undefined)?.name;
  if (supplied) throw errors.suppliedKey(supplied);
  const deadline = Date.now() + opts.waitSeconds * 1000;
  const secretName = statusOf(obj).secretName ?? `${name}-${opts.secretSuffix}`;
  if (opts.rotate || keyRevealed(obj)) {
    const oldHash = statusOf(obj).keyHash;
    try {
      await api.deleteSecret(ns, secretName);
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
    await api.patch(plural, ns, name, {
      metadata: { annotations: { [KEY_REQUESTED_ANNOTATION]: new Date().toISOString() } },
    });
    const issued = await until(async () => {
      const o = await api.get(plural, ns, name);
      const h = statusOf(o).keyHash;
      return h && h !== oldHash ? o : undefined;
    }, deadline);
    if (!issued) throw errors.keyNotIssued(opts.waitSeconds);
  }
  // The Secret and status agree once the operator has hashed what is in the Secret.
  const shown = await until(async () => {
    const secret = await api.getSecret(ns, secretName).catch((err: unknown) => {
      if (isStatus(err, 404)) return undefined;
      throw err;
    });
    const value = Buffer.from(secret?.data?.key ?? "", "base64")
      .toString("utf8")
      .trim();
    if (!value) return undefined;
    const o = await api.get(plural, ns, name);
    const st = statusOf(o);
    return st.keyHash === hashKey(value) ? { key: value, status: st } : undefined;
  }, deadline);
  if (!shown) throw errors.keyNotIssued(opts.waitSeconds);
  await api.patch(plural, ns, name, {
    metadata: { annotations: { [REVEALED_ANNOTATION]: shown.status.keyHash } },
  });
  return { key: shown.key, keyPrefix: shown.status.keyPrefix ?? "", endpoint: shown.status.endpoint };
}
