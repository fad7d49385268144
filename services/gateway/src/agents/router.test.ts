import { describe, expect, it } from "vitest";
import { attemptOrder, type RouteUpstream } from "./router.ts";

const up = (name: string, weight?: number) => ({ name, weight }) as RouteUpstream;

describe("attemptOrder", () => {
  it("without weights: the declared order", () => {
    const upstreams = [up("a"), up("b"), up("c")];
    expect(attemptOrder({ upstreams, weighted: false }, 0.99).map((u) => u.name)).toEqual(["a", "b", "c"]);
  });

  it("with weights: the drawn upstream first, the rest as declared; weight 0 and unweighted are never drawn", () => {
    const upstreams = [up("a", 1), up("b", 3), up("c"), up("d", 0)];
    const first = (draw: number) => attemptOrder({ upstreams, weighted: true }, draw).map((u) => u.name);
    expect(first(0)).toEqual(["a", "b", "c", "d"]);
    expect(first(0.24)).toEqual(["a", "b", "c", "d"]);
    expect(first(0.25)).toEqual(["b", "a", "c", "d"]);
    expect(first(0.999)).toEqual(["b", "a", "c", "d"]);
  });
});
