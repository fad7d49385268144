// The payload side of the Qdrant layout: the fields every point carries that searches and
// document operations filter on (each with a payload index), and the filters over them.

export interface Condition {
  key?: string;
  match?: { value: string | number } | { any: string[] };
  has_id?: string[];
  is_empty?: { key: string };
}
export interface Filter {
  must: Condition[];
  must_not?: Condition[];
}
/** Payload fields searches and document operations filter on; each gets a payload index. */
export const PAYLOAD_INDEXES: { field: string; schema: unknown }[] = [
  { field: "knowledgeId", schema: { type: "keyword", is_tenant: true } },
  { field: "docsId", schema: "keyword" },
  { field: "chunkIndex", schema: "integer" },
];

/** A model name as a collection-name part. */
export function slug(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "");
}

/** The points of one knowledge base (or of one of its documents). */
export function kbFilter(key: string, docsId?: string): Filter {
  const must: Condition[] = [{ key: "knowledgeId", match: { value: key } }];
  if (docsId !== undefined) must.push({ key: "docsId", match: { value: docsId } });
  return { must };
}

/**
 * The filters of a prune rule (types.ts: prunable), each selecting whole documents (every chunk
 * carries the stamps): documents of sources gone, those of complete sources the refresh did not
 * stamp, and legacy ones it did not write.
 */
export function pruneFilters(
  key: string,
  rule: { refresh: string; sources: string[]; complete: string[]; legacy: string[] },
): Filter[] {
  const kb = kbFilter(key).must;
  const notThisRefresh: Condition = { key: "refresh", match: { value: rule.refresh } };
  const filters: Filter[] = [
    {
      must: kb,
      must_not: [
        { is_empty: { key: "source" } },
        ...(rule.sources.length ? [{ key: "source", match: { any: rule.sources } }] : []),
      ],
    },
  ];
  if (rule.complete.length > 0) {
    filters.push({ must: [...kb, { key: "source", match: { any: rule.complete } }], must_not: [notThisRefresh] });
  }
  if (rule.legacy.length > 0) {
    filters.push({ must: [...kb, { key: "docsId", match: { any: rule.legacy } }], must_not: [notThisRefresh] });
  }
  return filters;
}
