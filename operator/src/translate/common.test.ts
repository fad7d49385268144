import type { KubeObject } from "@capstan/shared/kube";
import { describe, expect, it } from "vitest";
import { APPLIED_HASH, isSubset, stableStringify, upToDate, withAppliedHash } from "./common.ts";
import { parseDuration } from "./duration.ts";

describe("stableStringify / withAppliedHash", () => {
  it("ignores key order", () => {
    expect(stableStringify({ b: 1, a: [{ d: 2, c: 3 }] })).toBe(stableStringify({ a: [{ c: 3, d: 2 }], b: 1 }));
  });
  it("stamps a hash that changes with the content only", () => {
    const obj = (replicas: number): KubeObject => ({ metadata: { name: "x" }, spec: { replicas } });
    const a = withAppliedHash(obj(1));
    const again = withAppliedHash(a);
    const b = withAppliedHash(obj(2));
    expect(again.metadata.annotations?.[APPLIED_HASH]).toBe(a.metadata.annotations?.[APPLIED_HASH]);
    expect(b.metadata.annotations?.[APPLIED_HASH]).not.toBe(a.metadata.annotations?.[APPLIED_HASH]);
  });
});

describe("isSubset / upToDate", () => {
  it("accepts server defaults and omitted empty values, rejects drift", () => {
    expect(isSubset({ a: 1, env: [{ name: "X", value: "" }] }, { a: 1, b: 2, env: [{ name: "X" }] })).toBe(true);
    expect(isSubset({ a: 1 }, { a: 2 })).toBe(false);
    expect(isSubset({ list: [1, 2] }, { list: [1] })).toBe(false);
    expect(isSubset({ resources: { limits: { cpu: "0.5" } } }, { resources: { limits: { cpu: "500m" } } })).toBe(true);
  });
  it("needs the same applied hash and no drift", () => {
    const desired = withAppliedHash({ metadata: { name: "d", labels: { a: "1" } }, spec: { replicas: 2 } });
    expect(upToDate(undefined, desired)).toBe(false);
    const live = {
      ...desired,
      metadata: { ...desired.metadata, uid: "u", labels: { a: "1", extra: "x" } },
      spec: { replicas: 2, paused: false },
      status: {},
    };
    expect(upToDate(live, desired)).toBe(true);
    expect(upToDate({ ...live, spec: { replicas: 3 } }, desired)).toBe(false);
    expect(upToDate({ ...live, metadata: { ...live.metadata, annotations: {} } }, desired)).toBe(false);
  });
});

describe("parseDuration", () => {
  it("parses Go durations", () => {
    expect(parseDuration("90s")).toBe(90_000);
    expect(parseDuration("1h30m")).toBe(5_400_000);
    expect(parseDuration("2160h")).toBe(2160 * 3_600_000);
    expect(parseDuration("1.5h")).toBe(5_400_000);
    expect(parseDuration("500ms")).toBe(500);
    expect(() => parseDuration("5 days")).toThrow(/invalid duration/);
    expect(() => parseDuration("")).toThrow();
  });
});
