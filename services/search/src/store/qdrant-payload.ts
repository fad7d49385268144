// The payload side of the Qdrant layout: the fields every point carries that searches and
// document operations filter on (each with a payload index), and the filters over them.

export interface Condition {
  key?: string;
  match?: { value: string | number };
  has_id?: string[];
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
export function kbFilter(knowledgeId: string, docsId?: string): Filter {
  const must: Condition[] = [{ key: "knowledgeId", match: { value: knowledgeId } }];
  if (docsId !== undefined) must.push({ key: "docsId", match: { value: docsId } });
  return { must };
}
