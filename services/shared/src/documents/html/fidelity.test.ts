// Markdown fidelity on the forms documentation sites use: code, line breaks, permalinks,
// fragment links, tables, text and JSON responses.
import { load } from "cheerio";
import { describe, expect, it } from "vitest";
import { languageOf } from "./code-blocks.ts";
import { documentToMarkdown, htmlToMarkdown } from "./markdown.ts";

const BASE = "https://docs.example.org/lib/page.html";
const md = (html: string) => htmlToMarkdown(`<body>${html}</body>`, BASE);

describe("code blocks", () => {
  it("fences a <pre> without <code> and keeps it verbatim: no escaping, no reflow", () => {
    const out = md(`<pre>&gt;&gt;&gt; x == 0
True
&gt;&gt;&gt; json.dumps(d, sort_keys=True)   # *not* emphasis
'{"a_b": 1}'</pre>`);
    expect(out).toBe(
      "```\n>>> x == 0\nTrue\n>>> json.dumps(d, sort_keys=True)   # *not* emphasis\n'{\"a_b\": 1}'\n```",
    );
  });

  it.each([
    ['<pre class="lang-js">let a = 1;</pre>', "js"],
    ['<pre><code class="language-rust">fn main() {}</code></pre>', "rust"],
    [
      '<div class="highlight-python notranslate"><div class="highlight"><pre><span>print</span>(1)</pre></div></div>',
      "python",
    ],
    ['<pre class="brush: bash; gutter: false">ls -l</pre>', "bash"],
    ['<pre class="sourceCode haskell"><code>main = pure ()</code></pre>', "haskell"],
    ['<pre class="rust rust-example-rendered"><code>let v = vec![1];</code></pre>', "rust"],
    ['<div class="highlight-default notranslate"><pre>plain</pre></div>', ""],
  ])("takes the language of %s", (html, lang) => {
    expect(md(html).split("\n")[0]).toBe(`\`\`\`${lang}`);
  });

  it("turns <br> inside <pre> into line breaks and fences code holding backticks with a longer fence", () => {
    expect(md("<pre>one<br>two</pre>")).toBe("```\none\ntwo\n```");
    expect(md("<pre>a ``` b</pre>")).toBe("````\na ``` b\n````");
  });

  it("drops line-number gutters", () => {
    const out = md(
      '<table class="highlighttable"><tr><td class="linenos"><pre>1\n2</pre></td><td class="code"><div class="highlight"><pre>a = 1\nb = 2</pre></div></td></tr></table>',
    );
    expect(out).toBe("```\na = 1\nb = 2\n```");
  });

  it("knows the class conventions", () => {
    expect(languageOf("language-c++")).toBe("c++");
    expect(languageOf("highlight-none")).toBeUndefined();
    expect(languageOf("notranslate")).toBeUndefined();
  });
});

describe("text", () => {
  it("keeps <br> line breaks", () => {
    expect(md("<p>first line<br>second line</p>")).toBe("first line\\\nsecond line");
  });

  it("drops heading permalinks (¶, #, §, 🔗) and makes fragment links absolute", () => {
    const out = md(`<h2 id="usage">Usage<a class="headerlink" href="#usage" title="Link">¶</a></h2>
      <h3 id="b"><a href="#b" class="anchor">#</a>Second</h3><h3 id="c">Third <a href="#c">🔗</a></h3>
      <p>See <a href="#usage">usage</a>.</p>`);
    expect(out).toBe(`## Usage\n\n### Second\n\n### Third\n\nSee [usage](${BASE}#usage).`);
  });
});

describe("main content", () => {
  it("keeps footnotes and notes written as <aside>, drops DocBook's page navigation and sidebars", () => {
    const out = htmlToMarkdown(
      `<body><div class="navheader"><a href="a.html">Prev</a> Chapter 5 <a href="c.html">Next</a></div>
       <div role="main"><p>Text<a href="#f1">[1]</a>.</p>
       <aside class="footnote brackets" id="f1"><p>The footnote itself.</p></aside>
       <aside class="sidebar-promo">Buy now</aside></div>
       <div class="navfooter"><a href="c.html">Next page title</a></div></body>`,
      BASE,
      { onlyMainContent: true },
    );
    expect(out).toContain("The footnote itself.");
    expect(out).not.toMatch(/Prev|Next|Buy now/);
  });
});

describe("tables", () => {
  it("writes a simple table as GFM, the first row as header when there is no <th>", () => {
    expect(md("<table><tr><td>a</td><td>b</td></tr><tr><td>1</td><td>x | y</td></tr></table>")).toBe(
      "| a   | b   |\n| --- | --- |\n| 1   | x \\| y |",
    );
  });

  it("keeps a table with lists in cells or a header spanning columns as clean HTML", () => {
    const lists = md(
      '<table class="x" style="color:red"><tr><th>k</th><th>v</th></tr><tr><td>a</td><td><ul><li>one</li><li>two</li></ul></td></tr></table>',
    );
    expect(lists).toBe(
      "<table>\n<tr>\n<th>k</th><th>v</th>\n</tr>\n<tr>\n<td>a</td><td><ul>\n<li>one</li><li>two</li>\n</ul></td>\n</tr>\n</table>",
    );
    const spanning = md(
      '<table><thead><tr><th colspan="2">Group</th></tr><tr><th>a</th><th>b</th></tr></thead><tr><td>1</td><td>2</td></tr></table>',
    );
    expect(spanning).toContain('<th colspan="2">Group</th>');
    expect(spanning).not.toMatch(/^\|/m);
  });

  it("unwraps layout tables", () => {
    expect(md("<table><tr><td><p>only cell</p></td></tr></table>")).toBe("only cell");
  });
});

describe("text and JSON responses", () => {
  it("passes them through unescaped", () => {
    const json = '{"a_b": [1, 2], "c": "*x*"}';
    const $ = load(`<html><body><pre>${json}</pre></body></html>`);
    expect(documentToMarkdown($, "application/json; charset=utf-8", BASE)).toBe(json);
    const text = "# not a heading\nx_y = 1 <tag>";
    const $t = load(`<html><body><pre>${text.replace("<", "&lt;")}</pre></body></html>`);
    expect(documentToMarkdown($t, "text/plain", BASE)).toBe(text);
  });
});
