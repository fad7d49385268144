import { describe, expect, it } from "vitest";
import { periodOf } from "./budget-period.ts";

describe("periodOf", () => {
  const at = Date.parse("2027-03-31T23:59:59.999Z"); // a Wednesday
  it("month: from the first day to the next month's", () => {
    expect(periodOf("month", at)).toEqual({
      id: "2027-03-01",
      startMs: Date.parse("2027-03-01T00:00:00Z"),
      endMs: Date.parse("2027-04-01T00:00:00Z"),
    });
    expect(periodOf("month", Date.parse("2027-12-15T00:00:00Z")).endMs).toBe(Date.parse("2028-01-01T00:00:00Z"));
  });
  it("week: Monday to Monday, Sunday included in the week before", () => {
    expect(periodOf("week", at).id).toBe("2027-03-29");
    expect(periodOf("week", Date.parse("2027-04-04T12:00:00Z")).id).toBe("2027-03-29");
    expect(periodOf("week", Date.parse("2027-04-05T00:00:00Z")).id).toBe("2027-04-05");
  });
  it("day: midnight to midnight", () => {
    expect(periodOf("day", at)).toMatchObject({ id: "2027-03-31", endMs: Date.parse("2027-04-01T00:00:00Z") });
  });
});
