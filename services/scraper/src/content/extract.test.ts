import { load } from "cheerio";
import { describe, expect, it } from "vitest";
import { ScraperError } from "../errors.ts";
import { runExtractors, validateExtractors } from "./extractors.ts";
import { extractMetadata } from "./metadata.ts";

const HTML = `<html lang="de"><head><title>T</title>
  <meta name="DESCRIPTION" content=" A   page ">
  <meta property="og:image" content="/og.png"><meta name="twitter:card" content="summary">
  <link rel="icon" href="/favicon.ico"></head>
  <body><a class="l" href="/a">First</a><a class="l" href="https://x.example/b">Second</a>
  <input data-x='a@b' value="v"></body></html>`;

describe("extractors", () => {
  it("supports text, attribute and list forms, with selectors containing @ inside brackets", () => {
    const $ = load(HTML);
    expect(
      runExtractors(
        $,
        {
          first: "a.l",
          href: "a.l@href",
          all: { selector: "a.l", attribute: "href", all: true },
          texts: { selector: "a.l", all: true },
          quoted: "input[data-x='a@b']@value",
          none: "h6",
          noAttr: "a.l@title",
        },
        "https://site.example/dir/",
      ),
    ).toEqual({
      first: "First",
      href: "https://site.example/a",
      all: ["https://site.example/a", "https://x.example/b"],
      texts: ["First", "Second"],
      quoted: "v",
      none: null,
      noAttr: null,
    });
  });

  it("refuses selectors that do not parse, naming the extractor", () => {
    expect(() => validateExtractors({ ok: "a", broken: "a[" })).toThrow(ScraperError);
    expect(() => validateExtractors({ broken: "a[" })).toThrow("'broken'");
  });
});

describe("metadata", () => {
  it("reads the head, case-insensitively, and makes URLs absolute", () => {
    const meta = extractMetadata(load(HTML), {
      sourceURL: "https://site.example/start",
      url: "https://site.example/dir/",
      statusCode: 404,
      contentType: "text/html",
      error: "Not Found",
    });
    expect(meta).toEqual({
      title: "T",
      description: "A page",
      language: "de",
      favicon: "https://site.example/favicon.ico",
      ogImage: "https://site.example/og.png",
      twitterCard: "summary",
      sourceURL: "https://site.example/start",
      url: "https://site.example/dir/",
      statusCode: 404,
      contentType: "text/html",
      error: "Not Found",
    });
  });
});
