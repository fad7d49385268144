import { describe, expect, it } from "vitest";
import { bearerToken, displayPrefix, generateKey, hashKey, hasValidChecksum, KEY_PREFIX } from "./keys.ts";

describe("keys", () => {
  it("carry a prefix, 256 bits of randomness and a checksum", () => {
    const a = generateKey("chat");
    const b = generateKey("chat");
    expect(a).not.toBe(b);
    expect(a.startsWith(KEY_PREFIX.chat)).toBe(true);
    expect(a).toHaveLength(KEY_PREFIX.chat.length + 43 + 6);
    expect(hasValidChecksum(a)).toBe(true);
  });

  it("reject a one-character typo by checksum, without a lookup", () => {
    const key = generateKey("search");
    const i = KEY_PREFIX.search.length + 10;
    const typo = key.slice(0, i) + (key[i] === "A" ? "B" : "A") + key.slice(i + 1);
    expect(hasValidChecksum(typo)).toBe(false);
    expect(hasValidChecksum(key.slice(0, -1))).toBe(false);
  });

  it("accept user-supplied keys of any other shape (the hash lookup decides)", () => {
    expect(hasValidChecksum("sk-my-own-key")).toBe(true);
  });

  it("hash to sha256:<hex> and show only a short prefix", () => {
    const key = generateKey("chat");
    expect(hashKey(key)).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(hashKey(key)).toBe(hashKey(key));
    expect(displayPrefix(key)).toBe(`${key.slice(0, KEY_PREFIX.chat.length + 4)}…`);
  });

  it("read the bearer token of an Authorization header", () => {
    expect(bearerToken("Bearer abc")).toBe("abc");
    expect(bearerToken("bearer  abc ")).toBe("abc");
    expect(bearerToken("Basic abc")).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
    expect(bearerToken("Bearer a b")).toBeUndefined();
  });
});
