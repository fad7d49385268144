import { describe, expect, it } from "vitest";
import { ERRORS, errorEnvelope, SearchError } from "./errors.ts";

describe("error registry", () => {
  it("renders templates and carries the status", () => {
    const e = new SearchError("SEARCH_ERR_KNOWLEDGE_ID", { knowledgeId: "kb_x" });
    expect(e.status).toBe(400);
    expect(errorEnvelope(e)).toEqual({
      code: 400,
      message: "knowledge id is invalid or permissions are insufficient: kb_x",
      data: null,
    });
  });

  it("uses HTTP statuses for every entry", () => {
    for (const def of Object.values(ERRORS)) {
      expect(def.status).toBeGreaterThanOrEqual(400);
      expect(def.status).toBeLessThan(600);
    }
  });
});
