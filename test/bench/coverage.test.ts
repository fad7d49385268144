// Every benchmark has a smoke run in the test command: each runnable file under bench/ (a
// TypeScript or shell entry point, not a module the others import) must be named by one of the
// smoke test files beside this one, and must use bench/work.ts (its smoke mode and its checks).
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const HERE = fileURLToPath(new URL(".", import.meta.url));

/** Modules the benchmarks import, not run on their own. */
const MODULES = new Set([
  "bench/work.ts",
  "bench/env.ts",
  "bench/memory/breakdown.ts",
  "bench/memory/image-env.ts",
  "bench/memory/operator-run.ts",
  "bench/process-tree.ts",
  "bench/gateway/harness.ts",
  "bench/gateway/fake-upstream-server.ts",
  "bench/knowledge/site.ts",
  "bench/knowledge/stack.ts",
  "bench/operator/driver.ts",
  "bench/operator/layer.ts",
  "bench/operator/operator-process.ts",
  "bench/scraper/fidelity/score.ts",
  "bench/search/corpus.ts",
  "bench/search/vectors.ts",
]);

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : [relative(ROOT, join(dir, e.name))],
  );
}

const entries = files(join(ROOT, "bench")).filter(
  (f) => (f.endsWith(".ts") || f.endsWith(".sh")) && !f.endsWith(".d.ts") && !MODULES.has(f),
);
const smokeTests = readdirSync(HERE)
  .filter((f) => f.endsWith("-smoke.test.ts"))
  .map((f) => readFileSync(join(HERE, f), "utf8"))
  .join("\n");

describe("benchmarks", () => {
  it("finds the benchmarks", () => {
    expect(entries.length).toBeGreaterThan(10);
  });

  it.each(entries)("%s has a smoke run in test/bench/*-smoke.test.ts", (file) => {
    expect(smokeTests).toContain(`"${file}"`);
  });

  it.each(entries.filter((f) => f.endsWith(".ts")))("%s checks its work with bench/work.ts", (file) => {
    const source = readFileSync(join(ROOT, file), "utf8");
    expect(source).toMatch(/from "(\.\.\/)+work\.ts"/);
    expect(source).toMatch(/expect(Work|Count|AtLeast)\(/);
  });

  it.each([...MODULES])("%s exists (the list of modules is kept true)", (file) => {
    expect(files(join(ROOT, "bench"))).toContain(file);
  });
});
