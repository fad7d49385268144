// releaseMemoryWhenIdle in a real node process: after a burst of allocation and a quiet second,
// one memory-reducing collection that shrinks the young generation and the resident set; none
// again while nothing grows; nothing at all without --expose-gc.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const fixture = fileURLToPath(new URL("./idle-memory.fixture.ts", import.meta.url));

function run(flags: string[]): Promise<Record<string, number | boolean>[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...flags, fixture], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    const killer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    child.once("close", (code) => {
      clearTimeout(killer);
      if (code !== 0 || !out.includes("done")) return reject(new Error(`fixture ended with ${code}: ${out}`));
      resolve(
        out
          .split("\n")
          .filter((l) => l.startsWith("{"))
          .map((l) => JSON.parse(l)),
      );
    });
  });
}

describe("releaseMemoryWhenIdle", () => {
  it("releases memory once after a burst, when the loop has been quiet", async () => {
    const [burst, ...releases] = await run(["--expose-gc"]);
    expect(burst?.burst).toBe(true);
    // One release in the 4 s of quiet (start-up and burst together): the second check finds no growth.
    expect(releases).toHaveLength(1);
    const r = releases[0] as Record<string, number>;
    expect(r.rssAfter).toBeLessThan(r.rssBefore as number);
    expect(r.newSpaceAfter).toBeLessThan(burst?.newSpace as number);
  }, 30_000);

  it("does nothing when node runs without --expose-gc", async () => {
    const lines = await run([]);
    expect(lines.filter((l) => !l.burst)).toHaveLength(0);
  }, 30_000);
});
