import { describe, expect, it } from "vitest";
import { htmlToMarkdown } from "./markdown.ts";

const BASE = "https://example.org/docs/page.html";

describe("htmlToMarkdown", () => {
  it("converts headings, emphasis, lists, code and tables (GFM)", () => {
    const md = htmlToMarkdown(
      `<body><h2>Title</h2><p>Some <strong>bold</strong>, <em>em</em> and <del>gone</del>.</p>
      <ul><li>one</li><li>two</li></ul><pre><code>let x = 1;</code></pre>
      <table><tr><th>A</th><th>B</th></tr><tr><td>1</td><td>2</td></tr></table></body>`,
      BASE,
    );
    expect(md).toContain("## Title");
    expect(md).toContain("**bold**");
    expect(md).toContain("*em*");
    expect(md).toContain("~~gone~~");
    expect(md).toContain("- one\n- two");
    expect(md).toContain("```\nlet x = 1;\n```");
    expect(md).toMatch(/\| A +\| B +\|\n\| -{3,} \| -{3,} \|\n\| 1 +\| 2 +\|/);
  });

  it("resolves links and images against the page URL and drops script links and empty anchors", () => {
    const md = htmlToMarkdown(
      `<body><a href="../guide">Guide</a> <a href="javascript:void(0)">Click</a> <a href="/x"></a>
       <img src="img/a.png" alt="A"> <img src="data:image/png;base64,AAAA" alt="inline"></body>`,
      BASE,
    );
    expect(md).toContain("[Guide](https://example.org/guide)");
    expect(md).toContain("Click");
    expect(md).not.toContain("javascript");
    expect(md).not.toContain("(https://example.org/x)");
    expect(md).toContain("![A](https://example.org/docs/img/a.png)");
    expect(md).not.toContain("data:image");
  });

  it("numbers ordered lists and nests lists", () => {
    const md = htmlToMarkdown(`<ol start="3"><li>three<ul><li>inner</li></ul></li><li>four</li></ol>`, BASE);
    expect(md).toBe("3. three\n   - inner\n4. four");
  });

  it("drops scripts, styles and hidden nodes", () => {
    const md = htmlToMarkdown(
      `<body><style>p{}</style><script>var secret=1</script><p>shown</p><p hidden>hidden</p>
       <div style="display:none">invisible</div></body>`,
      BASE,
    );
    expect(md).toBe("shown");
  });

  it("keeps only the main content when asked, preferring the largest article", () => {
    const html = `<body><nav>Menu</nav><header>Banner</header><div class="cookie-banner">Cookies?</div>
      <article>Teaser</article><article><h1>Story</h1><p>Long story text here.</p></article>
      <aside>Related</aside><footer>Legal</footer></body>`;
    const md = htmlToMarkdown(html, BASE, { onlyMainContent: true });
    expect(md).toBe("# Story\n\nLong story text here.");
    expect(htmlToMarkdown(html, BASE)).toContain("Legal");
  });
});
