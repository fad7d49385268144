// The PDF-to-Markdown benchmark in its smoke mode (bench/work.ts): a PDF it makes itself, and the
// Libtasn1 manual the converter's tests read (scripts/setup.d/42-documents.sh). The benchmark
// checks that each PDF gave non-empty Markdown with headings; only that is asserted.
import { describe, expect, it } from "vitest";
import { smoke } from "./run-bench.ts";

describe("documents benchmark (smoke)", () => {
  it("pdf-markdown.ts converts its generated PDF to Markdown with headings", async () => {
    const out = await smoke("bench/documents/pdf-markdown.ts", [], { timeoutMs: 30_000 });
    expect(out).toContain("work checked: 1 files (1 PDFs)");
    expect(out).toMatch(/"file":"\(generated smoke PDF\)".*"headings":[1-9]/);
  });

  it("pdf-markdown.ts converts a real manual", async () => {
    const out = await smoke("bench/documents/pdf-markdown.ts", ["/usr/share/doc/libtasn1-doc/libtasn1.pdf"], {
      timeoutMs: 30_000,
    });
    expect(out).toContain("work checked: 1 files (1 PDFs)");
  });
});
