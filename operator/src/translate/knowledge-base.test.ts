// When a KnowledgeBase is refreshed again: on its interval, and sooner while sources fail; which
// the documents of the legacy annotation; and which vector set its status names.
import type { KnowledgeBase } from "@capstan/shared/api";
import { describe, expect, it } from "vitest";
import {
  docsIdFor,
  FAILING_SINCE_ANNOTATION,
  FIRST_RETRY_MS,
  kbCountsStatus,
  kbProgressStatus,
  legacyDocuments,
  refreshDueIn,
} from "./knowledge-base.ts";

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

describe("legacyDocuments", () => {
  const a = docsIdFor("a", "url");
  const b = docsIdFor("b", "configMap", "x");
  it("reads every id of the old annotation, per source or the older comma list", () => {
    expect(legacyDocuments(JSON.stringify({ [a]: [a], [b]: [b, a] }))).toEqual([a, b].sort());
    expect(legacyDocuments(`${b},${a},`)).toEqual([a, b].sort());
    expect(legacyDocuments(undefined)).toEqual([]);
    expect(legacyDocuments("{not json")).toEqual(["{not json"]);
  });
});

describe("kbProgressStatus", () => {
  it("shows the serving vector set this run found, its layout with its model (after a switch)", () => {
    const before = {
      ...kb("2026-01-01T00:00:00Z", 0),
      status: {
        observedGeneration: 1,
        servingModel: "local:a",
        collection: "a-collection",
        vectors: { backend: "qdrant", size: 384, distance: "Cosine", hnsw: { m: 0, efConstruct: 128, efSearch: 128 } },
        building: { model: "openai:b", dimensions: 512, documents: 1, chunks: 1 },
        uploaded: { documents: 2, chunks: 2 },
      },
    } as unknown as KnowledgeBase;
    const vectors = {
      backend: "qdrant" as const,
      size: 512,
      distance: "Cosine",
      hnsw: { m: 0, efConstruct: 128, efSearch: 128 },
    };
    const st = kbProgressStatus(before, 0, 1, new Date("2026-01-01T01:00:00Z"), {
      model: "openai:b",
      collection: "b-collection",
      vectors,
    });
    expect(st).toMatchObject({
      servingModel: "openai:b",
      collection: "b-collection",
      vectors,
      progress: "0/1 sources",
    });
    expect(st.building).toBeUndefined();
    expect(st.uploaded).toEqual({ documents: 2, chunks: 2 }); // counts kept until the run reads them
    expect(st.conditions?.find((c) => c.type === "CollectionReady")?.message).toBe("collection b-collection");
  });
});

describe("kbCountsStatus", () => {
  const vectors = (size: number) => ({
    backend: "qdrant" as const,
    size,
    distance: "Cosine",
    hnsw: { m: 0, efConstruct: 128, efSearch: 128 },
  });
  // The status of the last complete run with model A (an informer that has not seen the switch
  // to B still holds it).
  const servedByA = {
    ...kb("2026-01-01T00:00:00Z", 0),
    status: {
      observedGeneration: 1,
      servingModel: "local:a",
      collection: "a-collection",
      vectors: vectors(384),
      documents: 3,
      chunks: 3,
    },
  } as unknown as KnowledgeBase;

  it("takes the serving model, its collection and vectors from the same read as the counts", () => {
    const st = kbCountsStatus(servedByA, {
      knowledgeId: "kb_docs",
      documents: 3,
      chunks: 3,
      model: "openai:b",
      collection: "b-collection",
      vectors: vectors(512),
    });
    expect(st).toMatchObject({ servingModel: "openai:b", collection: "b-collection", vectors: vectors(512) });
  });

  it("keeps the status's vector set when search names no collection (an older search)", () => {
    const st = kbCountsStatus(servedByA, { knowledgeId: "kb_docs", documents: 4, chunks: 5, model: "openai:b" });
    expect(st).toMatchObject({ servingModel: "local:a", collection: "a-collection", documents: 4, chunks: 5 });
  });
});
