import { describe, expect, it } from "vitest";
import { cosineFloorOf, cosineToScore } from "./types.ts";

describe("the one score mapping", () => {
  it("maps cosine to 0..1, rounded to six decimals", () => {
    expect(cosineToScore(1)).toBe(1);
    expect(cosineToScore(0)).toBe(0.5);
    expect(cosineToScore(-1)).toBe(0);
    expect(cosineToScore(Math.SQRT1_2)).toBe(0.853553);
    // float32 noise of a vector scored against itself (Qdrant: 0.99999994) is still exactly 1
    expect(cosineToScore(0.99999994)).toBe(1);
    expect(cosineToScore(1.0000001)).toBe(1);
  });

  it("the pre-filter floor lets through every cosine whose score reaches the minimum", () => {
    for (const min of [0, 0.25, 0.5, 0.75, 0.812346, 0.999999, 1]) {
      const floor = cosineFloorOf(min);
      // the lowest cosine that still scores `min` after rounding is above the floor
      const lowest = 2 * (min - 0.5e-6) - 1;
      expect(floor).toBeLessThan(lowest);
      expect(cosineToScore(lowest + 1e-9)).toBeGreaterThanOrEqual(min);
      // and the floor is tight: a few ulps, not a different threshold
      expect(lowest - floor).toBeLessThan(1e-5);
    }
  });
});
