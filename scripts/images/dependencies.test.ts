// Dependency hygiene: knip (configured in knip.jsonc) finds no package that a workspace lists
// and none of its code imports, so an unused dependency cannot come back into the images or the
// install. The same check on a throwaway workspace with one unused dependency shows it can fail.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));
const knipBin = join(root, "node_modules/knip/bin/knip.js");

interface KnipIssue {
  file: string;
  dependencies: { name: string }[];
  devDependencies: { name: string }[];
}

async function unusedDependencies(cwd: string): Promise<string[]> {
  // knip exits 1 when it finds issues; the JSON report is on stdout either way.
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [knipBin, "--include", "dependencies", "--no-progress", "--reporter", "json", "--no-exit-code"],
    { cwd, maxBuffer: 16 * 1024 * 1024, timeout: 240_000 },
  );
  const report = JSON.parse(stdout) as { issues: KnipIssue[] };
  return report.issues.flatMap((i) => [...i.dependencies, ...i.devDependencies].map((d) => `${i.file}: ${d.name}`));
}

describe("dependencies", () => {
  const scratch = mkdtempSync(join(tmpdir(), "capstan-knip-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("every workspace uses every package it lists", async () => {
    expect(await unusedDependencies(root)).toEqual([]);
  }, 300_000);

  it("a listed package that nothing imports is reported", async () => {
    writeFileSync(
      join(scratch, "package.json"),
      JSON.stringify({ name: "scratch", type: "module", dependencies: { yaml: "^2.0.0", zod: "^4.0.0" } }),
    );
    mkdirSync(join(scratch, "src"));
    writeFileSync(join(scratch, "src/index.ts"), 'import { z } from "zod";\nexport const s = z.string();\n');
    expect(await unusedDependencies(scratch)).toEqual(["package.json: yaml"]);
  }, 300_000);
});
