// When a KnowledgeBase is refreshed again: on its interval, and sooner while sources fail.
import type { KnowledgeBase } from "@capstan/shared/api";
import { describe, expect, it } from "vitest";
import { FAILING_SINCE_ANNOTATION, FIRST_RETRY_MS, refreshDueIn } from "./knowledge-base.ts";

const HOUR = 3_600_000;

function kb(lastRefresh: string, failures: number, failingSince?: string): KnowledgeBase {
  return {
    apiVersion: "capstan.dev/v1alpha1",
    kind: "KnowledgeBase",
    metadata: {
      name: "docs",
      namespace: "a",
      generation: 1,
      ...(failingSince ? { annotations: { [FAILING_SINCE_ANNOTATION]: failingSince } } : {}),
    },
    spec: { refreshInterval: "24h" },
    status: { observedGeneration: 1, lastRefreshTime: lastRefresh, failures },
  } as unknown as KnowledgeBase;
}

describe("refreshDueIn", () => {
  const at = (iso: string) => new Date(iso);

  it("waits the refresh interval after a refresh in which every source ingested", () => {
    expect(refreshDueIn(kb("2026-01-01T00:00:00Z", 0), at("2026-01-01T01:00:00Z"))).toBe(23 * HOUR);
  });

  it("retries failed sources 30 s after the first failure", () => {
    const k = kb("2026-01-01T00:00:00Z", 1, "2026-01-01T00:00:00Z");
    expect(refreshDueIn(k, at("2026-01-01T00:00:10Z"))).toBe(FIRST_RETRY_MS - 10_000);
  });

  it("doubles the wait while the sources keep failing, up to the refresh interval", () => {
    // Failing since 00:00, last tried at 00:04: the next try waits 4 minutes.
    const k = kb("2026-01-01T00:04:00Z", 2, "2026-01-01T00:00:00Z");
    expect(refreshDueIn(k, at("2026-01-01T00:04:00Z"))).toBe(4 * 60_000);
    const old = kb("2026-01-03T00:00:00Z", 2, "2026-01-01T00:00:00Z");
    expect(refreshDueIn(old, at("2026-01-03T00:00:00Z"))).toBe(24 * HOUR);
  });

  it("refreshes at once after a spec change", () => {
    const k = kb("2026-01-01T00:00:00Z", 0);
    k.metadata.generation = 2;
    expect(refreshDueIn(k, at("2026-01-01T00:00:01Z"))).toBe(0);
  });
});
