// The repository's structure rules, held by npm test: no import cycles and no package importing
// another's source (dependency-cruiser, rules in .dependency-cruiser.cjs), and no TypeScript source
// file over 400 lines (split along its parts instead: describe blocks, one concern per module).
import { execFile } from "node:child_process";
import { globSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);

/** The most lines a .ts/.tsx source file may have. */
const MAX_LINES = 400;
const SOURCE_ROOTS = ["services", "operator", "console", "test", "scripts", "bench"];

/**
 * Every .ts/.tsx file under the source roots, relative to the repository root: not installed
 * packages, not build output, not generated code (a `generated/` folder or a `*.generated.ts`).
 */
function sourceFiles(root = "."): string[] {
  return globSync(
    SOURCE_ROOTS.map((dir) => `${dir}/**/*.{ts,tsx}`),
    {
      cwd: root,
      exclude: (path: string) => /(^|\/)(node_modules|dist|generated)$/.test(path) || /\.generated\.tsx?$/.test(path),
    },
  ).sort();
}

/** Files over MAX_LINES, as "path: N lines". */
function oversized(files: string[], root = "."): string[] {
  return files.flatMap((file) => {
    const text = readFileSync(`${root}/${file}`, "utf8");
    const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
    return lines > MAX_LINES ? [`${file}: ${lines} lines`] : [];
  });
}

describe("repository structure", () => {
  it("has no import cycle and no package importing another's src (dependency-cruiser)", async () => {
    const result = await run(
      "node_modules/.bin/depcruise",
      ["--config", ".dependency-cruiser.cjs", "--output-type", "err", "services", "operator", "scripts", "test"],
      { maxBuffer: 16 * 1024 * 1024 },
    ).then(
      (r) => ({ code: 0, out: r.stdout }),
      (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, out: err.stdout + err.stderr }),
    );
    expect(result.out).not.toMatch(/error/);
    expect(result.code).toBe(0);
  }, 120_000);

  it(`has no source file over ${MAX_LINES} lines`, () => {
    const files = sourceFiles();
    // The walk found the tree (a wrong root or pattern would pass vacuously).
    expect(files).toContain("scripts/structure.test.ts");
    expect(files.some((f) => f.endsWith(".tsx"))).toBe(true);
    expect(files.some((f) => f.includes("node_modules"))).toBe(false);
    expect(oversized(files)).toEqual([]);
  });

  it("names a file over the limit, and leaves out installed packages and generated code", () => {
    const root = mkdtempSync(join(tmpdir(), "capstan-structure-"));
    try {
      const lines = (n: number) => "export const x = 1;\n".repeat(n);
      const put = (file: string, n: number) => {
        mkdirSync(join(root, file, ".."), { recursive: true });
        writeFileSync(join(root, file), lines(n));
      };
      put("services/a/src/big.ts", MAX_LINES + 1);
      put("console/web/src/page.tsx", MAX_LINES);
      put("services/a/node_modules/dep/index.ts", 1000);
      put("test/generated/client.ts", 1000);
      put("bench/api.generated.ts", 1000);
      const files = sourceFiles(root);
      expect(files).toEqual(["console/web/src/page.tsx", "services/a/src/big.ts"]);
      expect(oversized(files, root)).toEqual([`services/a/src/big.ts: ${MAX_LINES + 1} lines`]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
