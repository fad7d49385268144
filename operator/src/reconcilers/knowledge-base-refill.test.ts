// Which KnowledgeBases the search Deployment's events wake (SearchWakeups): all of them once search
// has come up anew, on the new template only; the ones still waiting for search otherwise.
import type { KubeObject } from "@capstan/shared/kube";
import { describe, expect, it } from "vitest";
import { rolledOut, SearchWakeups } from "./knowledge-base-refill.ts";

const NS = "capstan-system";
const NAME = "capstan-search";

let version = 0;

interface State {
  generation: number;
  observed?: number;
  replicas?: number;
  updated?: number;
  ready?: number;
  want?: number;
}

function deployment(s: State): KubeObject {
  version += 1;
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { namespace: NS, name: NAME, generation: s.generation, resourceVersion: String(version) },
    spec: { replicas: s.want ?? 1 },
    status: {
      observedGeneration: s.observed ?? s.generation,
      replicas: s.replicas ?? s.want ?? 1,
      updatedReplicas: s.updated ?? s.want ?? 1,
      readyReplicas: s.ready ?? s.want ?? 1,
    },
  } as KubeObject;
}

function kb(name: string, ready: boolean): KubeObject {
  return {
    apiVersion: "capstan.dev/v1alpha1",
    kind: "KnowledgeBase",
    metadata: { namespace: "team", name },
    status: { conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
  } as KubeObject;
}

const kbs = [kb("served", true), kb("waiting", false)];
const names = (woken: KubeObject[]) => woken.map((k) => k.metadata.name);

describe("SearchWakeups", () => {
  it("wakes every KnowledgeBase on search's first ready rollout, then only the waiting ones", () => {
    const w = new SearchWakeups(NS, NAME);
    expect(names(w.wake(deployment({ generation: 1 }), kbs))).toEqual(["served", "waiting"]);
    expect(names(w.wake(deployment({ generation: 1 }), kbs))).toEqual(["waiting"]);
  });

  it("ignores an object it has already seen (updates are mapped with old and new)", () => {
    const w = new SearchWakeups(NS, NAME);
    const d = deployment({ generation: 1, ready: 0 });
    expect(w.wake(d, kbs)).toEqual([]);
    const ready = deployment({ generation: 1 });
    expect(w.wake(ready, kbs)).toHaveLength(2);
    expect(w.wake(ready, kbs)).toEqual([]);
  });

  it("after no replica was ready (a Recreate, a restart), wakes every KnowledgeBase again", () => {
    const w = new SearchWakeups(NS, NAME);
    w.wake(deployment({ generation: 1 }), kbs);
    expect(w.wake(deployment({ generation: 1, ready: 0 }), kbs)).toEqual([]);
    expect(names(w.wake(deployment({ generation: 1 }), kbs))).toEqual(["served", "waiting"]);
  });

  it("in a RollingUpdate, wakes every KnowledgeBase only once no old replica serves", () => {
    const w = new SearchWakeups(NS, NAME);
    w.wake(deployment({ generation: 1, want: 2 }), kbs);
    // The new template observed, one new pod starting beside the two old ones, which serve.
    const rolling = deployment({ generation: 2, want: 2, replicas: 3, updated: 1, ready: 2 });
    expect(rolledOut(rolling)).toBe(false);
    expect(names(w.wake(rolling, kbs))).toEqual(["waiting"]);
    // One old replica left.
    expect(names(w.wake(deployment({ generation: 2, want: 2, replicas: 3, updated: 2, ready: 3 }), kbs))).toEqual([
      "waiting",
    ]);
    const done = deployment({ generation: 2, want: 2 });
    expect(rolledOut(done)).toBe(true);
    expect(names(w.wake(done, kbs))).toEqual(["served", "waiting"]);
  });

  it("does not count a template the controller has not observed yet", () => {
    expect(rolledOut(deployment({ generation: 3, observed: 2 }))).toBe(false);
  });

  it("ignores other Deployments", () => {
    const w = new SearchWakeups(NS, NAME);
    const other = { ...deployment({ generation: 1 }), metadata: { namespace: NS, name: "capstan-gateway" } };
    expect(w.wake(other as KubeObject, kbs)).toEqual([]);
  });
});
