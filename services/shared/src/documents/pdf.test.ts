import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DocumentError, formatOf, pdfToMarkdown, toMarkdown } from "./index.ts";
import { makePdf } from "./pdf.fixture.ts";

const long =
  "Knowledge bases hold documents that the search service splits into chunks, embeds with the " +
  "knowledge base's model and stores in the vector store, so that a question finds the passage " +
  "that answers it even when it shares no word with it.";

describe("pdfToMarkdown", () => {
  it("keeps headings, paragraphs, lists and code; drops running footers and page numbers", async () => {
    const pdf = await makePdf({
      title: "Capstan Handbook",
      info: { Title: "The Capstan handbook" },
      sections: [
        { heading: "Getting started", paragraphs: [long, "A second paragraph follows the first one."] },
        { heading: "Features", bullets: ["Semantic search", "Scoped keys"], numbered: ["Install", "Apply YAML"] },
        { heading: "Example", code: ["kubectl apply -f kb.yaml", "  --namespace team-a"] },
        { heading: "Closing words", paragraphs: ["The end of the manual."] },
      ],
    });
    const { markdown, title, pages } = await pdfToMarkdown(pdf);
    expect(title).toBe("The Capstan handbook");
    expect(pages).toBe(2);
    expect(markdown).toContain("# Capstan Handbook");
    expect(markdown).toMatch(/^## Getting started$/m);
    expect(markdown).toMatch(/^## Closing words$/m);
    // The wrapped paragraph is one paragraph again, and the second one its own.
    expect(markdown).toContain(long);
    expect(markdown).toMatch(/\n\nA second paragraph follows the first one\.\n/);
    expect(markdown).toMatch(/^- Semantic search$/m);
    expect(markdown).toMatch(/^- Scoped keys$/m);
    expect(markdown).toMatch(/^1\. Install$/m);
    expect(markdown).toMatch(/^2\. Apply YAML$/m);
    expect(markdown).toContain("```\nkubectl apply -f kb.yaml\n  --namespace team-a\n```");
    expect(markdown).not.toContain("Capstan test manual");
  });

  it("refuses what is not a readable PDF with a clear reason", async () => {
    await expect(pdfToMarkdown(Buffer.from("hello"))).rejects.toMatchObject({ reason: "invalid" });
    const truncated = (await makePdf({ title: "T", sections: [] })).subarray(0, 200);
    const err = await pdfToMarkdown(truncated).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DocumentError);
    expect((err as DocumentError).reason).toBe("invalid");
    expect((err as Error).message).toMatch(/PDF/);
  });

  it("bounds the pages it converts", async () => {
    const pdf = await makePdf({ title: "T", sections: [{ heading: "a" }, { heading: "b" }, { heading: "c" }] });
    await expect(pdfToMarkdown(pdf, { maxPages: 1 })).rejects.toMatchObject({ reason: "too_large" });
  });

  // A real manual from a Debian package (scripts/setup.d/42-documents.sh installs it).
  it("converts GNU Libtasn1's manual (Texinfo PDF) with its sections, lists and code", async () => {
    const file = "/usr/share/doc/libtasn1-doc/libtasn1.pdf";
    expect(existsSync(file), `${file}: run scripts/setup.d/42-documents.sh`).toBe(true);
    const { markdown } = await pdfToMarkdown(readFileSync(file));
    expect(markdown).toMatch(/^## 1 Introduction$/m);
    expect(markdown).toMatch(/^### 2\.1 ASN\.1 syntax$/m);
    expect(markdown).toContain("- Distinguished Encoding Rules (DER) encoding support.");
    expect(markdown).toContain("```\n-- INCORRECT\nVersion ::=INTEGER\n```");
    // Hyphenated line ends are joined again.
    expect(markdown).toContain("structures management");
  });
});

describe("toMarkdown", () => {
  it("passes Markdown and text through and converts HTML", async () => {
    expect(formatOf("text/html; charset=utf-8")).toBe("html");
    expect(formatOf("image/png")).toBeUndefined();
    const md = await toMarkdown("markdown", Buffer.from("# Title\r\n\r\nbody\r\n"));
    expect(md.markdown).toBe("# Title\n\nbody");
    const html = await toMarkdown(
      "html",
      Buffer.from(
        "<html><head><title>A &amp; B</title><style>p{}</style></head><body><h1>Top</h1><p>One <b>two</b></p>" +
          "<ul><li>x</li></ul><pre><code class='language-js'>let a = 1;</code></pre>" +
          "<table><tr><th>k</th><th>v</th></tr><tr><td>1</td><td>2</td></tr></table><script>x()</script></body></html>",
      ),
    );
    expect(html.title).toBe("A & B");
    expect(html.markdown).toContain("# Top");
    expect(html.markdown).toContain("One **two**");
    expect(html.markdown).toMatch(/^-\s+x$/m);
    expect(html.markdown).toContain("```js\nlet a = 1;\n```");
    expect(html.markdown).toMatch(/^\| k +\| v +\|$/m);
    expect(html.markdown).not.toContain("x()");
  });

  it("converts uploaded HTML with the scraper's converter: every entity decoded, relative links kept", async () => {
    const html = await toMarkdown(
      "html",
      Buffer.from(
        "<html><head><title>Caf&eacute; &mdash; r&#233;sum&#xE9;</title></head><body>" +
          "<p>Tom&nbsp;&amp;&nbsp;Jerry &hellip; <a href='../guide.html#setup'>setup</a> " +
          "<a href='javascript:alert(1)'>run</a></p></body></html>",
      ),
    );
    expect(html.title).toBe("Café — résumé");
    expect(html.markdown).toContain("Tom\u00a0&\u00a0Jerry …");
    expect(html.markdown).toContain("[setup](../guide.html#setup)");
    expect(html.markdown).not.toContain("javascript:");
  });

  it("refuses text that is not UTF-8", async () => {
    await expect(toMarkdown("text", Buffer.from([0xff, 0xfe, 0x41]))).rejects.toMatchObject({ reason: "invalid" });
  });
});
