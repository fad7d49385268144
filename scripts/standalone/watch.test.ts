import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AnyResource, parseResource } from "@capstan/shared/api";
import { afterEach, describe, expect, it } from "vitest";
import { describeDiff, diffResources, knowledgeChanges, watchResources } from "./watch.ts";

const kb = (name: string, text: string) =>
  parseResource({
    apiVersion: "capstan.dev/v1alpha1",
    kind: "KnowledgeBase",
    metadata: { name, namespace: "ns" },
    spec: { sources: [{ name: "doc", text }] },
  });
const yamlKb = (name: string, text: string) =>
  `apiVersion: capstan.dev/v1alpha1\nkind: KnowledgeBase\nmetadata: {name: ${name}, namespace: ns}\nspec:\n  sources:\n    - name: doc\n      text: ${text}\n`;

describe("diffResources", () => {
  it("tells added, changed and removed resources apart by spec", () => {
    const d = diffResources([kb("a", "one"), kb("b", "two")], [kb("a", "one!"), kb("c", "three")]);
    expect(describeDiff(d)).toBe(
      "1 added (KnowledgeBase ns/c), 1 changed (KnowledgeBase ns/a), 1 removed (KnowledgeBase ns/b)",
    );
    expect(knowledgeChanges(d)).toMatchObject({ drop: ["kb_b"] });
    expect(knowledgeChanges(d).ingest.map((r) => r.metadata.name)).toEqual(["c", "a"]);
    expect(describeDiff(diffResources([kb("a", "x")], [kb("a", "x")]))).toBe("");
  });
});

describe("watchResources", () => {
  let dir = "";
  let stop = () => {};
  afterEach(() => {
    stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("applies a saved change, rejects a broken folder with the reason, and says when it reads again", async () => {
    dir = mkdtempSync(join(tmpdir(), "capstan-watch-"));
    writeFileSync(join(dir, "kb.yaml"), yamlKb("a", "one"));
    const events: string[] = [];
    const seen = (n: number) =>
      new Promise<void>((resolve) => {
        const t = setInterval(() => {
          if (events.length < n) return;
          clearInterval(t);
          resolve();
        }, 20);
      });
    stop = watchResources([kb("a", "one")], {
      dir,
      quietMs: 50,
      apply: async (next: AnyResource[], diff) => {
        events.push(`apply ${next.length}: ${describeDiff(diff)}`);
      },
      rejected: (err) => events.push(`rejected ${err.message}`),
      failed: (err) => events.push(`failed ${err.message}`),
      recovered: () => events.push("recovered"),
    });
    writeFileSync(join(dir, "kb.yaml"), yamlKb("a", "two"));
    await seen(1);
    writeFileSync(join(dir, "broken.yaml"), "apiVersion: capstan.dev/v1alpha1\nkind: KnowledgeBase\nmetadata: {}\n");
    await seen(2);
    rmSync(join(dir, "broken.yaml"));
    await seen(3);
    expect(events[0]).toBe("apply 1: 1 changed (KnowledgeBase ns/a)");
    expect(events[1]).toMatch(/^rejected .*broken\.yaml: /);
    expect(events[2]).toBe("recovered");
  });
});
