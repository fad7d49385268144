import { describe, expect, it } from "vitest";
import { defineErrors, renderMessage } from "./errors.ts";

describe("renderMessage", () => {
  it("fills {name} placeholders by name", () => {
    expect(renderMessage("at most {limit} per minute; retry after {retryAfter} s", { limit: 5, retryAfter: 2 })).toBe(
      "at most 5 per minute; retry after 2 s",
    );
  });

  it("fills them in order of appearance from a list", () => {
    expect(renderMessage("method {method} not allowed on {url}; use {allow}", ["PUT", "/scrape", "POST"])).toBe(
      "method PUT not allowed on /scrape; use POST",
    );
  });

  it("leaves a missing value empty and a template without placeholders as is", () => {
    expect(renderMessage("invalid request: {detail}")).toBe("invalid request: ");
    expect(renderMessage("internal error", ["x"])).toBe("internal error");
  });

  it("keeps a registry's literal codes", () => {
    const errors = defineErrors({ A: { status: 400, message: "a {x}" } });
    const code: keyof typeof errors = "A";
    expect(renderMessage(errors[code].message, { x: 1 })).toBe("a 1");
  });
});
