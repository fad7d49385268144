import { describe, expect, it } from "vitest";
import { chunkText } from "./chunking.ts";

describe("chunkText", () => {
  it("keeps a short text whole and drops empty input", () => {
    expect(chunkText("  One short paragraph.  ", { size: 100, overlap: 10 })).toEqual(["One short paragraph."]);
    expect(chunkText(" \n\n ", { size: 100, overlap: 10 })).toEqual([]);
  });

  it("splits on paragraphs first and never exceeds the size", () => {
    const paras = Array.from({ length: 6 }, (_, i) => `Paragraph ${i} ${"word ".repeat(20)}`.trim());
    const chunks = chunkText(paras.join("\n\n"), { size: 250, overlap: 0 });
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) expect(c.length).toBeLessThanOrEqual(250);
    expect(chunks[0]?.startsWith("Paragraph 0")).toBe(true);
    // Every paragraph is in some chunk, in order.
    const joined = chunks.join("\n\n");
    let at = -1;
    for (const p of paras) {
      const i = joined.indexOf(p);
      expect(i).toBeGreaterThan(at);
      at = i;
    }
  });

  it("overlaps neighbouring chunks by at most the overlap", () => {
    const text = Array.from({ length: 60 }, (_, i) => `Sentence number ${i} is here.`).join(" ");
    const chunks = chunkText(text, { size: 200, overlap: 60 });
    expect(chunks.length).toBeGreaterThan(3);
    for (let i = 1; i < chunks.length; i++) {
      const prev = chunks[i - 1] as string;
      const cur = chunks[i] as string;
      const firstSentence = cur.slice(0, cur.indexOf(".") + 1);
      expect(prev.includes(firstSentence)).toBe(true); // starts with the previous chunk's tail
      expect(cur.length).toBeLessThanOrEqual(200);
    }
  });

  it("cuts a text without separators by characters", () => {
    const chunks = chunkText("x".repeat(1000), { size: 300, overlap: 50 });
    for (const c of chunks) expect(c.length).toBeLessThanOrEqual(300);
    expect(chunks.join("").length).toBeGreaterThanOrEqual(1000);
  });
});
