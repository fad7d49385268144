import { generateKey, hashKey, verifyingHash } from "@capstan/shared";
import { parseResource } from "@capstan/shared/api";
import { ResourceView } from "@capstan/shared/resource-view";
import { describe, expect, it } from "vitest";
import { ChannelDirectory, keyHashOf } from "./channels.ts";
import { GatewayError } from "./errors.ts";

function channel(name: string, key: string, spec: Record<string, unknown> = {}, status: Record<string, unknown> = {}) {
  return parseResource({
    apiVersion: "capstan.dev/v1alpha1",
    kind: "AccessChannel",
    metadata: { name, namespace: "ns" },
    spec: { channelName: name, agentRef: { name: "bot" }, ...spec },
    status: { keyHash: hashKey(key), ...status },
  });
}

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as GatewayError).code;
  }
  return "none";
}

describe("ChannelDirectory", () => {
  const key = generateKey("chat");
  const now = Date.parse("2026-06-01T00:00:00Z");

  it("hashes keys exactly as hashKey from @capstan/shared does", () => {
    for (const k of [key, generateKey("chat"), "x", "ünïcode-key"]) expect(keyHashOf(k)).toBe(hashKey(k));
  });

  it("finds the channel of a key by its hash, with the spec defaults", () => {
    const view = new ResourceView();
    view.replace("AccessChannel", [channel("a", key)]);
    const dir = new ChannelDirectory(view);
    const c = dir.authenticate(`Bearer ${key}`, now);
    expect(c).toMatchObject({ id: "ns/a", qpm: 100, keepHistory: false, agentName: "bot", agent: undefined });
  });

  it("finds a user-supplied key by its HMAC under the verifier key, and not without that key", () => {
    const verifier = "operator-generated-verifier-key-0123456789";
    const view = new ResourceView();
    view.replace("AccessChannel", [channel("a", "x", {}, { keyHash: verifyingHash("hunter2", verifier) })]);
    expect(new ChannelDirectory(view, verifier).authenticate("Bearer hunter2", now).id).toBe("ns/a");
    expect(codeOf(() => new ChannelDirectory(view).authenticate("Bearer hunter2", now))).toBe("invalid_api_key");
    expect(codeOf(() => new ChannelDirectory(view, `${verifier}x`).authenticate("Bearer hunter2", now))).toBe(
      "invalid_api_key",
    );
  });

  it("rejects missing, malformed and unknown keys", () => {
    const dir = new ChannelDirectory(new ResourceView());
    expect(codeOf(() => dir.authenticate(undefined, now))).toBe("missing_api_key");
    expect(codeOf(() => dir.authenticate("Token abc", now))).toBe("missing_api_key");
    expect(codeOf(() => dir.authenticate(`Bearer ${key}`, now))).toBe("invalid_api_key");
  });

  it("enforces expiry at request time, from spec or status, whichever is earlier", () => {
    const view = new ResourceView();
    const k2 = generateKey("chat");
    view.replace("AccessChannel", [
      channel("a", key, { expiresAt: "2026-06-01T00:00:01Z" }),
      channel("b", k2, { expiresAt: "2027-01-01T00:00:00Z" }, { expiresAt: "2026-05-01T00:00:00Z" }),
    ]);
    const dir = new ChannelDirectory(view);
    expect(dir.authenticate(`Bearer ${key}`, now).id).toBe("ns/a");
    expect(codeOf(() => dir.authenticate(`Bearer ${key}`, now + 1000))).toBe("expired_api_key");
    expect(codeOf(() => dir.authenticate(`Bearer ${k2}`, now))).toBe("expired_api_key");
  });

  it("follows changes of the view", () => {
    const view = new ResourceView();
    const dir = new ChannelDirectory(view);
    expect(codeOf(() => dir.authenticate(`Bearer ${key}`, now))).toBe("invalid_api_key");
    const c = channel("a", key);
    view.upsert(c);
    expect(dir.authenticate(`Bearer ${key}`, now).id).toBe("ns/a");
    view.delete(c);
    expect(codeOf(() => dir.authenticate(`Bearer ${key}`, now))).toBe("invalid_api_key");
    dir.close();
  });
});

describe("GatewayError", () => {
  it("fills its message template and has the OpenAI body shape", () => {
    const err = new GatewayError("rate_limit_exceeded", { limit: 5, retryAfter: 3 });
    expect(err.status).toBe(429);
    expect(err.toBody()).toEqual({
      error: {
        message: "Rate limit reached: 5 requests per minute. Retry in 3s.",
        type: "requests",
        param: null,
        code: "rate_limit_exceeded",
      },
    });
  });
});
