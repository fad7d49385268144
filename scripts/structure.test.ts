// The repository's structure rules, held by npm test: no import cycles and no package importing
// another's source (dependency-cruiser, rules in .dependency-cruiser.cjs).
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);

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
});
