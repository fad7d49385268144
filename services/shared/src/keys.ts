// API keys: issued with 256 bits of entropy, a recognisable prefix and a checksum so a typo is
// rejected without a lookup; stored and matched only as a SHA-256 hash. A key a user supplies
// (keySecretRef) may be guessable, so its verifier is an HMAC under a key the operator generates
// and only the data plane holds (docs/security.md "Key verifiers").
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export const KEY_PREFIX = { chat: "cap_chat_", search: "cap_srch_", scraper: "cap_scr_" } as const;
export type KeyKind = keyof typeof KEY_PREFIX;

const CHECKSUM_LENGTH = 6;
const BODY_LENGTH = 43; // base64url of 32 bytes

function checksum(prefix: string, body: string): string {
  return createHash("sha256").update(`${prefix}${body}`).digest("base64url").slice(0, CHECKSUM_LENGTH);
}

/** A new key: prefix + 43 base64url characters (32 random bytes) + 6 checksum characters. */
export function generateKey(kind: KeyKind): string {
  const prefix = KEY_PREFIX[kind];
  const body = randomBytes(32).toString("base64url");
  return `${prefix}${body}${checksum(prefix, body)}`;
}

/**
 * True when the key is one of ours and its checksum matches. User-supplied keys (any other
 * shape) are accepted as they are: this is a cheap filter, not the authentication.
 */
export function hasValidChecksum(key: string): boolean {
  for (const prefix of Object.values(KEY_PREFIX)) {
    if (!key.startsWith(prefix)) continue;
    const rest = key.slice(prefix.length);
    if (rest.length !== BODY_LENGTH + CHECKSUM_LENGTH) return false;
    const body = rest.slice(0, BODY_LENGTH);
    const given = Buffer.from(rest.slice(BODY_LENGTH));
    const want = Buffer.from(checksum(prefix, body));
    return given.length === want.length && timingSafeEqual(given, want);
  }
  return true;
}

/** `sha256:<hex>`: the only form in which a key leaves its Secret. */
export function hashKey(key: string): string {
  return `sha256:${createHash("sha256").update(key).digest("hex")}`;
}

/**
 * `hmac-sha256:<hex>` of a user-supplied key under the verifier key: what status carries for it.
 * Unlike a bare hash it cannot be tested against guesses by whoever reads the resource.
 */
export function verifyingHash(key: string, verifierKey: string): string {
  return `hmac-sha256:${createHmac("sha256", verifierKey).update(key).digest("hex")}`;
}

/**
 * The forms a presented key is matched in: its SHA-256 (generated keys) and, when the data plane
 * holds the verifier key, its HMAC (user-supplied keys).
 */
export function presentedHashes(key: string, verifierKey: string | undefined): string[] {
  return verifierKey ? [hashKey(key), verifyingHash(key, verifierKey)] : [hashKey(key)];
}

/** What status shows to recognise a key: its prefix and the next four characters. */
export function displayPrefix(key: string): string {
  const prefix = Object.values(KEY_PREFIX).find((p) => key.startsWith(p)) ?? "";
  return `${key.slice(0, prefix.length + 4)}…`;
}

/** The bearer token of an Authorization header, or undefined. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(value ?? "");
  return match?.[1];
}
