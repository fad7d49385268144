// stopOnSignals in a real child process: exit 0 after a clean stop; exit 1 after a failed one,
// one that outlives the grace period, or a second signal during the stop.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const fixture = fileURLToPath(new URL("./lifecycle.fixture.ts", import.meta.url));

/** Starts the fixture, sends `signals` (each after the previous one was seen), returns how it ended. */
async function run(stop: string, signals: NodeJS.Signals[]): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [fixture], {
    env: { ...process.env, STOP: stop },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const closed = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  const printed = (text: string) =>
    Promise.race([
      new Promise<void>((resolve) => {
        const check = setInterval(() => {
          if (out.includes(text)) {
            clearInterval(check);
            resolve();
          }
        }, 5);
        void closed.then(() => clearInterval(check));
      }),
      closed.then(() => {
        if (!out.includes(text)) throw new Error(`the fixture exited before printing "${text}": ${out}`);
      }),
    ]);
  try {
    await printed("ready");
    const [first, ...more] = signals;
    if (first) expect(child.kill(first)).toBe(true);
    if (more.length) await printed("stopping on");
    // The "ok" stop takes 500 ms: a further signal lands while it runs.
    for (const s of more) expect(child.kill(s)).toBe(true);
    return { code: await closed, out };
  } finally {
    clearTimeout(killer);
  }
}

describe("stopOnSignals", () => {
  it("stops once on SIGTERM and exits 0", async () => {
    const { code, out } = await run("ok", ["SIGTERM"]);
    expect(code).toBe(0);
    expect(out).toBe("ready\nstopping on SIGTERM\n");
  });

  it("stops on SIGINT too", async () => {
    const { code, out } = await run("ok", ["SIGINT"]);
    expect(code).toBe(0);
    expect(out).toContain("stopping on SIGINT");
  });

  it("exits 1 at once on a second signal during the stop, without stopping again", async () => {
    const { code, out } = await run("ok", ["SIGTERM", "SIGINT"]);
    expect(code).toBe(1);
    expect(out).toBe("ready\nstopping on SIGTERM\n");
  });

  it("exits 1 when the stop fails", async () => {
    expect((await run("fail", ["SIGTERM"])).code).toBe(1);
  });

  it("exits 1 when the stop outlives the grace period", async () => {
    expect((await run("hang", ["SIGTERM"])).code).toBe(1);
  });
});
