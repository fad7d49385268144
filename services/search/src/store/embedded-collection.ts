// The embedded store's in-memory shape of one knowledge base generation (a usearch HNSW index,
// the chunk payloads and each document's keys) and how a new one is made.
import { Index, MetricKind, ScalarKind } from "usearch";
import type { ChunkRecord, CollectionInfo } from "./types.ts";

export interface EmbeddedStoreOptions {
  dataDir?: string | undefined;
  /** HNSW graph degree (M). */
  connectivity?: number;
  expansionAdd?: number;
  expansionSearch?: number;
  flushDelayMs?: number;
  /** How long a replaced generation still answers searches that name its model. */
  retireGraceMs?: number;
  onError?: (err: Error) => void;
}

/** Where a generation is persisted: its folder under dataDir; retired ones are not persisted. */
export type Place = "collections" | "building" | "retired";

export interface Collection {
  info: CollectionInfo;
  place: Place;
  index: Index;
  chunks: Map<bigint, ChunkRecord>;
  docs: Map<string, bigint[]>;
  nextKey: bigint;
  dirty: boolean;
}

export interface Entry {
  serving: Collection;
  building?: Collection | undefined;
  /** The generation replaced by the last switch, until its grace period ends. */
  retired?: Collection | undefined;
  retireTimer?: NodeJS.Timeout | undefined;
}

export interface PersistedChunks {
  nextKey: string;
  chunks: [string, ChunkRecord][];
}

export function newIndex(opts: EmbeddedStoreOptions, dimensions: number): Index {
  return new Index({
    dimensions,
    metric: MetricKind.Cos,
    quantization: ScalarKind.F32,
    connectivity: opts.connectivity ?? 16,
    expansion_add: opts.expansionAdd ?? 128,
    expansion_search: opts.expansionSearch ?? 256,
    multi: false,
  });
}

export function emptyCollection(opts: EmbeddedStoreOptions, info: CollectionInfo, place: Place): Collection {
  return {
    info: { ...info },
    place,
    index: newIndex(opts, info.dimensions),
    chunks: new Map(),
    docs: new Map(),
    nextKey: 1n,
    dirty: true,
  };
}

export function track(col: Collection, key: bigint, record: ChunkRecord): void {
  col.chunks.set(key, record);
  const keys = col.docs.get(record.docsId);
  if (keys) keys.push(key);
  else col.docs.set(record.docsId, [key]);
}
