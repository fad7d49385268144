import { parseResource } from "@capstan/shared/api";
import { describe, expect, it } from "vitest";
import { keyValidity, keyWarning, nextBoundaryMs } from "./expiry.ts";

const channel = (expiresAt?: string) =>
  parseResource({
    apiVersion: "capstan.dev/v1alpha1",
    kind: "AccessChannel",
    metadata: { name: "c", namespace: "ns" },
    spec: { channelName: "C", agentRef: { name: "a" }, ...(expiresAt ? { expiresAt } : {}) },
  });
const searchKey = (spec: Record<string, string>) =>
  parseResource({
    apiVersion: "capstan.dev/v1alpha1",
    kind: "SearchKey",
    metadata: { name: "s", namespace: "ns" },
    spec: { keyName: "S", knowledgeIds: ["kb_a"], ...spec },
  });
const now = new Date("2026-11-23T12:00:00Z");

describe("key expiry", () => {
  it("classifies channel and search keys by their own fields", () => {
    expect(keyValidity(channel(), now).state).toBe("valid");
    expect(keyValidity(channel("2027-12-31T23:59:59Z"), now).state).toBe("valid");
    expect(keyValidity(channel("2026-11-30T12:00:00Z"), now).state).toBe("expiring");
    expect(keyValidity(channel("2026-11-23T12:00:00Z"), now).state).toBe("expired"); // at the instant
    expect(keyValidity(searchKey({ validUntil: "2026-01-01T00:00:00Z" }), now).state).toBe("expired");
    expect(keyValidity(searchKey({ validFrom: "2026-12-01T00:00:00Z" }), now).state).toBe("not-yet-valid");
    expect(keyValidity(channel("2026-12-10T00:00:00Z"), now, 30).state).toBe("expiring");
  });

  it("says what happens and which field to change", () => {
    expect(keyWarning(channel("2026-01-01T00:00:00Z"), now, "/res")).toBe(
      "WARNING: the key of AccessChannel ns/c EXPIRED at 2026-01-01T00:00:00Z: every request with it is answered 401. " +
        "Change spec.expiresAt in /res (the folder is watched; the same key keeps working once it is valid).",
    );
    expect(keyWarning(channel("2026-11-26T00:00:00Z"), now, "/res")).toMatch(
      /^WARNING: the key of AccessChannel ns\/c expires in 2 days \(2026-11-26T00:00:00Z\); change spec.expiresAt in \/res/,
    );
    expect(keyWarning(searchKey({ validUntil: "2026-11-23T15:30:00Z" }), now, "/res")).toMatch(
      /SearchKey ns\/s expires in 3 hours .*spec.validUntil/,
    );
    expect(keyWarning(channel("2027-12-31T23:59:59Z"), now, "/res")).toBeUndefined();
  });

  it("knows when the next warning is due", () => {
    const soon = channel("2026-12-10T12:00:00Z"); // warning 14 days before: 2026-11-26T12:00Z
    expect(nextBoundaryMs([soon], now)).toBe(3 * 86_400_000);
    expect(nextBoundaryMs([channel()], now)).toBeUndefined();
  });
});
