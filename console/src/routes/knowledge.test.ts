import { describe, expect, it } from "vitest";
import { documentText } from "./knowledge.ts";

describe("uploaded documents", () => {
  it("HTML becomes Markdown without scripts or styles; Markdown and text stay as they are", () => {
    const md = documentText(
      "text/html",
      "<html><head><style>p{}</style><script>alert(1)</script></head><body><h1>Gate</h1><p>Code <b>ZEBRA-42</b></p></body></html>",
    );
    expect(md).toContain("# Gate");
    expect(md).toContain("**ZEBRA-42**");
    expect(md).not.toContain("alert");
    expect(md).not.toContain("p{}");
    expect(documentText("text/markdown", "# Title\n<b>x</b>")).toBe("# Title\n<b>x</b>");
    expect(documentText("text/plain", "plain")).toBe("plain");
  });
});
