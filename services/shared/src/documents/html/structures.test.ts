// Structures of real documentation pages that the fidelity benchmark (bench/scraper/fidelity)
// found converted badly, each as a minimal fixture of the page's own markup: rustdoc's headings,
// PostgreSQL's DocBook tables and admonitions, Sphinx's footnotes and sidebars, Wikipedia-style
// link targets holding parentheses.
import { describe, expect, it } from "vitest";
import { linkDestination, linkTitle } from "./inline.ts";
import { htmlToMarkdown } from "./markdown.ts";

const BASE = "https://docs.example.org/lib/page.html";
const md = (html: string) => htmlToMarkdown(`<body>${html}</body>`, BASE);
const main = (html: string) => htmlToMarkdown(`<body>${html}</body>`, BASE, { onlyMainContent: true });

describe("headings", () => {
  it("keeps a heading with a <br> on one line (rustdoc's where clauses)", () => {
    const out = md(
      '<h3 class="code-header">impl&lt;T&gt; <a href="any/trait.Any.html" title="trait core::any::Any">Any</a> for T <span class="where fmt-newline">where<br>&nbsp;&nbsp;&nbsp;&nbsp;T: \'static + ?Sized,</span></h3><p>Body.</p>',
    );
    const [heading, ...rest] = out.split("\n\n");
    expect(heading).toMatch(
      /^### impl<T> \[Any\]\(https:\/\/docs\.example\.org\/lib\/any\/trait\.Any\.html "trait core::any::Any"\) for T where\s+T: 'static \+ \?Sized,$/u,
    );
    expect(rest).toEqual(["Body."]);
  });

  it("keeps a heading holding block elements on one line", () => {
    expect(md("<h2><div>Part</div><div>two</div></h2>")).toBe("## Part two");
  });
});

describe("inline code holding links", () => {
  it("splits the code around each link, so the link is a link and the text reads the same", () => {
    const out = md(
      '<h3 id="variant.Inner"><a href="#variant.Inner" class="anchor field"></a><code>Inner(<a class="struct" href="token/struct.Bang.html" title="struct syn::token::Bang">Bang</a>)</code></h3>',
    );
    expect(out).toBe(
      '### `Inner(`[`Bang`](https://docs.example.org/lib/token/struct.Bang.html "struct syn::token::Bang")`)`',
    );
  });

  it("leaves the spaces around a link outside the code spans and code without links alone", () => {
    expect(md('<p><code>impl <a href="/F">From</a> for <span>X</span></code> and <code>a_b</code></p>')).toBe(
      "`impl` [`From`](https://docs.example.org/F) `for X` and `a_b`",
    );
  });
});

describe("DocBook tables", () => {
  it("writes a catalog table whose cells hold a definition and a description paragraph as GFM", () => {
    const out = md(`<table class="table" summary="pg_policies Columns" border="1"><colgroup><col /></colgroup>
      <thead><tr><th class="catalog_table_entry"><p class="column_definition">Column Type</p><p>Description</p></th></tr></thead>
      <tbody><tr><td class="catalog_table_entry"><p class="column_definition"><code class="structfield">tablename</code> <code class="type">name</code>
       (references <a class="link" href="catalog-pg-class.html"><code class="structname">pg_class</code></a>.<code class="structfield">relname</code>)</p>
      <p>Name of table policy is on</p></td></tr>
      <tr><td><p><code>permissive</code> <code>text</code></p><p>Is the policy permissive or restrictive?</p></td></tr></tbody></table>`);
    expect(out.split("\n")).toEqual([
      "| Column Type<br>Description |",
      "| --- |",
      "| `tablename` `name` (references [`pg_class`](https://docs.example.org/lib/catalog-pg-class.html).`relname`)<br>Name of table policy is on |",
      "| `permissive` `text`<br>Is the policy permissive or restrictive? |",
    ]);
  });

  it("unwraps an admonition drawn as a table (icon cell spanning two rows, title, text) and fences its code", () => {
    const out = md(`<div class="tip"><table border="0" summary="Tip"><tr>
      <td rowspan="2" align="center" valign="top" width="25"><img alt="[Tip]" src="images/tip.png"></td><th align="left">Tip</th></tr>
      <tr><td align="left" valign="top"><p>Use an alias:</p><pre class="screen">alias ls='ls --time-style=+%d.%m.%y %H:%M'</pre></td></tr></table></div>`);
    expect(out).not.toContain("<table");
    expect(out).toContain("Tip");
    expect(out).toContain("Use an alias:\n\n```\nalias ls='ls --time-style=+%d.%m.%y %H:%M'\n```");
  });

  it("still keeps a two-row table with two text cells in a row as a table", () => {
    expect(md("<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>")).toMatch(/^\| k/);
  });
});

describe("asides in the main content", () => {
  it("keeps Sphinx's footnote list (an aside of footnote asides)", () => {
    const out =
      main(`<div role="main"><section><p>Python’s virtual base class <a class="footnote-reference brackets" href="#id2" id="id1">[1]</a></p>
      <p class="rubric">Footnotes</p><aside class="footnote-list brackets"><aside class="footnote brackets" id="id2" role="note">
      <span class="label"><a role="doc-backlink" href="#id1">1</a></span><p>C++ programmers should note this.</p></aside></aside></section></div>`);
    expect(out).toContain("C++ programmers should note this.");
    expect(out).toContain(`(${BASE}#id1)`);
  });

  it("keeps a prose sidebar inside a section, drops a sidebar of links and one outside the sections", () => {
    const out = main(`<div role="main"><section><h1>logging.config</h1>
      <aside class="sidebar"><p class="sidebar-title">Important</p><p>This page contains only reference information. For tutorials, please see</p>
      <ul><li><a href="../howto/logging.html#basic">Basic Tutorial</a></li></ul></aside>
      <aside class="related"><ul><li><a href="a.html">Previous topic</a></li><li><a href="b.html">Next topic</a></li></ul></aside>
      <p>Text.</p></section><aside class="sidebar">Sponsored content box</aside></div>`);
    expect(out).toContain("This page contains only reference information");
    expect(out).toContain("[Basic Tutorial](https://docs.example.org/howto/logging.html#basic)");
    expect(out).not.toMatch(/Previous topic|Next topic|Sponsored/);
  });
});

describe("link targets", () => {
  it("writes balanced parentheses as they are and escapes the others", () => {
    expect(md('<a href="https://en.wikipedia.org/wiki/Git_(software)">Git</a>')).toBe(
      "[Git](https://en.wikipedia.org/wiki/Git_(software))",
    );
    expect(linkDestination("https://x.org/a)b")).toBe("https://x.org/a\\)b");
    expect(linkDestination("https://x.org/a b")).toBe("<https://x.org/a b>");
  });

  it("quotes a title holding double quotes with single quotes, then parentheses", () => {
    expect(linkTitle('dbm: Interfaces to Unix "database" formats.')).toBe(
      ` 'dbm: Interfaces to Unix "database" formats.'`,
    );
    expect(linkTitle(`GNU's "dbm"`)).toBe(` (GNU's "dbm")`);
    expect(linkTitle(`GNU's "dbm" (Unix)`)).toBe(` "GNU's \\"dbm\\" (Unix)"`);
    expect(linkTitle(null)).toBe("");
    expect(md('<a href="/dbm" title="Unix &quot;database&quot; formats">dbm</a>')).toBe(
      `[dbm](https://docs.example.org/dbm 'Unix "database" formats')`,
    );
  });
});
