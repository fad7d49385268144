// stopOnSignals in a real child process: one stop per process whatever the signals, exit 0
// after a clean stop, exit 1 after a failed one or one that outlives the grace period.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const fixture = fileURLToPath(new URL("./lifecycle.fixture.ts", import.meta.url));

async function run(stop: string, signals: NodeJS.Signals[]): Promise<{ code: number | null; out: string }> {
  const child: ChildProcess = spawn(process.execPath, [fixture], {
    env: { ...process.env, STOP: stop },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
  let out = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  const printed = (text: string) =>
    new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (out.includes(text)) {
          clearInterval(check);
          resolve();
        }
      }, 10);
    });
  await printed("ready");
  const [first, ...more] = signals;
  if (first) child.kill(first);
  if (more.length) await printed("stopping on");
  for (const s of more) child.kill(s);
  const code = await exited;
  clearTimeout(killer);
  return { code, out };
}

describe("stopOnSignals", () => {
  it("stops once on SIGTERM (a second signal does not stop again) and exits 0", async () => {
    const { code, out } = await run("ok", ["SIGTERM", "SIGINT"]);
    expect(code).toBe(0);
    expect(out.match(/stopping on/g)).toEqual(["stopping on"]);
    expect(out).toContain("stopping on SIGTERM");
  });

  it("stops on SIGINT too", async () => {
    const { code, out } = await run("ok", ["SIGINT"]);
    expect(code).toBe(0);
    expect(out).toContain("stopping on SIGINT");
  });

  it("exits 1 when the stop fails", async () => {
    expect((await run("fail", ["SIGTERM"])).code).toBe(1);
  });

  it("exits 1 when the stop outlives the grace period", async () => {
    expect((await run("hang", ["SIGTERM"])).code).toBe(1);
  });
});
