import { describe, expect, it } from "vitest";
import { knowledgeSource, ownerFirst } from "./knowledge-base.ts";

const at = "2026-11-25T14:18:41Z";
const kb = (name: string, creationTimestamp: string, status?: object) => ({
  metadata: { name, creationTimestamp },
  spec: { knowledgeId: "kb_shared" },
  ...(status ? { status } : {}),
});
const owner = (conditions: object[]) => ({ knowledgeId: "kb_shared", conditions });
const ready = { type: "Ready", status: "True", reason: "Ready" };
const duplicate = { type: "Ready", status: "False", reason: "DuplicateKnowledgeId" };

describe("ownerFirst: which KnowledgeBase owns a knowledgeId", () => {
  it("keeps the one that holds the id, even against an older one or one created in the same second that sorts first", () => {
    // Creation times have one-second resolution: "copy" sorts before "docs" by name.
    const docs = kb("docs", at, owner([ready]));
    const copy = kb("copy", at);
    expect([copy, docs].sort(ownerFirst)[0]).toBe(docs);
    const older = kb("older", "2026-11-25T14:00:00Z");
    expect([older, docs].sort(ownerFirst)[0]).toBe(docs);
  });

  it("does not count a duplicate's status, nor a status naming an id the spec no longer has", () => {
    const copy = kb("copy", at, owner([duplicate]));
    const docs = kb("docs", at);
    expect([copy, docs].sort(ownerFirst)[0]).toBe(copy); // neither holds it: by name
    const moved = { ...kb("docs", at, { knowledgeId: "kb_old", conditions: [ready] }) };
    const later = kb("later", "2026-11-25T15:00:00Z", owner([ready]));
    expect([moved, later].sort(ownerFirst)[0]).toBe(later);
  });

  it("falls back to the oldest, then the first by name", () => {
    const a = kb("b-newer", "2026-11-25T15:00:00Z");
    const b = kb("z-older", "2026-11-25T14:00:00Z");
    const c = kb("a-older", "2026-11-25T14:00:00Z");
    expect([a, b, c].sort(ownerFirst).map((k) => k.metadata.name)).toEqual(["a-older", "z-older", "b-newer"]);
  });
});

describe("knowledgeSource: a crawl source", () => {
  const crawl = (c: object) => knowledgeSource.safeParse({ name: "Docs", crawl: c });

  it("takes a start URL and defaults the page limit to 100", () => {
    const parsed = crawl({ url: "https://example.com/docs/", maxDepth: 2, excludePaths: ["^/docs/old"] });
    expect(parsed.success && parsed.data.crawl).toEqual({
      url: "https://example.com/docs/",
      limit: 100,
      maxDepth: 2,
      excludePaths: ["^/docs/old"],
    });
  });

  it("takes a limit of 50,000 and refuses one over it, a non-HTTP start URL and an empty path pattern", () => {
    expect(crawl({ url: "https://example.com/", limit: 50_000 }).success).toBe(true);
    expect(crawl({ url: "https://example.com/", limit: 50_001 }).success).toBe(false);
    expect(crawl({ url: "ftp://example.com/" }).success).toBe(false);
    expect(crawl({ url: "https://example.com/", includePaths: [""] }).success).toBe(false);
  });

  it("is one kind of source: with a url as well it is refused with the CRD's message", () => {
    const both = knowledgeSource.safeParse({
      name: "d",
      url: "https://example.com/",
      crawl: { url: "https://example.com/" },
    });
    expect(both.error?.issues[0]?.message).toBe("a source sets exactly one of url, text, configMap, crawl");
    expect(knowledgeSource.safeParse({ name: "d" }).success).toBe(false);
  });
});
