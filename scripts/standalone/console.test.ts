// When `npm start` rebuilds the console's page: a build older than any of its sources is stale
// (a `git pull` that changed the page must not leave the last build served).
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { consoleBuildStale } from "./console.ts";

let base: string;
afterEach(() => rmSync(base, { recursive: true, force: true }));

function file(path: string, secondsAgo: number): void {
  const full = join(base, path);
  mkdirSync(dirname(full), { recursive: true });
  writeFileSync(full, "x");
  const t = new Date(Date.now() - secondsAgo * 1000);
  utimesSync(full, t, t);
}

describe("the console page's build", () => {
  it("is stale when missing, or older than a page, console, shared or lock file; fresh otherwise", () => {
    base = mkdtempSync(join(tmpdir(), "capstan-console-build-"));
    file("console/web/src/pages/knowledge.tsx", 300);
    file("services/shared/src/api/index.ts", 300);
    file("package-lock.json", 300);
    expect(consoleBuildStale(base)).toBe(true);
    file("console/dist/index.html", 200);
    expect(consoleBuildStale(base)).toBe(false);
    file("services/shared/src/api/knowledge-base.ts", 100);
    expect(consoleBuildStale(base)).toBe(true);
    file("console/dist/index.html", 50);
    expect(consoleBuildStale(base)).toBe(false);
    file("console/web/src/pages/knowledge.tsx", 10);
    expect(consoleBuildStale(base)).toBe(true);
  });
});
