// The embedded store's in-memory shape of one knowledge base's vector set (a usearch HNSW index,
// the chunk payloads and each document's keys) and how a new one is made.
import { Index, MetricKind, ScalarKind } from "usearch";
import {
  type ChunkRecord,
  type CollectionInfo,
  type DocumentPage,
  type DocumentSummary,
  type IngestStamps,
  type PruneRule,
  prunable,
  stampsOf,
} from "./types.ts";

export interface EmbeddedStoreOptions {
  dataDir?: string | undefined;
  /** HNSW graph degree (M). */
  connectivity?: number;
  expansionAdd?: number;
  expansionSearch?: number;
  flushDelayMs?: number;
  /** How long a replaced vector set still answers searches that name its model. */
  retireGraceMs?: number;
  onError?: (err: Error) => void;
}

/** Where a vector set is persisted: its folder under dataDir; retired ones are not persisted. */
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
  /** The vector set replaced by the last switch, until its grace period ends. */
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

/** A document as listed: its chunk count and its first chunk's name and metadata. */
export function summaryOf(col: Collection, docsId: string): DocumentSummary | undefined {
  const keys = col.docs.get(docsId);
  const first = keys?.[0] === undefined ? undefined : col.chunks.get(keys[0]);
  if (!keys || !first) return undefined;
  return {
    docsId,
    docsName: first.docsName,
    chunks: keys.length,
    ...(first.extra ? { extra: first.extra } : {}),
    ...stampsOf(first),
  };
}

/** VectorStore.documentPage on one vector set: its documents of the prefix in docsId order, from `from` on. */
export function pageOf(
  col: Collection | undefined,
  prefix: string,
  from: string | undefined,
  scan: number,
  source?: string,
): DocumentPage {
  const keep = (id: string) => id.startsWith(prefix) && (source === undefined || firstOf(col, id)?.source === source);
  // Plain string order (UTF-16 code units) for both the sort and the position comparison.
  const ids = [...(col?.docs.keys() ?? [])].filter(keep).sort();
  const start = from === undefined ? 0 : ids.findIndex((id) => id >= from);
  const window = start < 0 ? [] : ids.slice(start, start + scan);
  const documents = window.flatMap((id) => {
    const summary = col && summaryOf(col, id);
    return summary ? [{ ...summary, at: id }] : [];
  });
  const next = start < 0 ? undefined : ids[start + scan];
  return { documents, ...(next !== undefined ? { next } : {}) };
}

/** One document's chunks (copies), by chunkIndex. */
export function chunksOf(col: Collection | undefined, docsId: string): ChunkRecord[] {
  const records = (col?.docs.get(docsId) ?? []).flatMap((k) => {
    const r = col?.chunks.get(k);
    return r ? [{ ...r }] : [];
  });
  return records.sort((a, b) => a.chunkIndex - b.chunkIndex);
}

function firstOf(col: Collection | undefined, docsId: string): ChunkRecord | undefined {
  const key = col?.docs.get(docsId)?.[0];
  return key === undefined ? undefined : col?.chunks.get(key);
}

/** Sets stamps on every chunk of a document; false when the vector set does not have it. */
export function stampDoc(col: Collection, docsId: string, stamps: IngestStamps): boolean {
  const keys = col.docs.get(docsId);
  if (!keys) return false;
  for (const k of keys) {
    const r = col.chunks.get(k);
    if (r) Object.assign(r, stampsOf(stamps));
  }
  return true;
}

/** The documents of a vector set that go under a prune rule. */
export function prunableDocs(col: Collection, rule: PruneRule): string[] {
  return [...col.docs.keys()].filter((id) => {
    const first = firstOf(col, id);
    return first !== undefined && prunable(first, rule);
  });
}
