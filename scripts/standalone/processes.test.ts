import { type ChildProcess, spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { freePort } from "../../test/ground/ports.ts";
import { backoffMs, describeExit, Supervisor, waitReady } from "./processes.ts";

const SERVICE = new URL("./testdata/service.ts", import.meta.url).pathname;
const LAUNCHER = new URL("./testdata/launcher.ts", import.meta.url).pathname;

async function until(what: string, check: () => boolean, timeoutMs = 50_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("restart policy", () => {
  it("doubles the backoff up to its maximum and names statuses and signals", () => {
    expect([1, 2, 3, 6, 7].map((n) => backoffMs(n, 1000, 30_000))).toEqual([1000, 2000, 4000, 30_000, 30_000]);
    expect(describeExit(0, null)).toBe("status 0");
    expect(describeExit(null, "SIGKILL")).toBe("signal SIGKILL");
  });
});

// Real child processes: slow to start on a loaded machine, so longer than the unit default.
describe("Supervisor", { timeout: 120_000 }, () => {
  let launcher: ChildProcess | undefined;
  afterEach(() => {
    if (launcher?.pid && alive(launcher.pid)) process.kill(-launcher.pid, "SIGKILL");
  });

  it("reports every exit, status 0 included, and restarts with a growing backoff", async () => {
    const lines: string[] = [];
    const sup = new Supervisor({ say: (l) => lines.push(l), print: () => {}, initialBackoffMs: 100 });
    const port = String(await freePort());
    const s = sup.start({
      name: "svc",
      entry: SERVICE,
      url: `http://127.0.0.1:${port}`,
      readyPath: "/",
      env: { PORT: port },
    });
    expect(await waitReady(s, 50_000)).toBe(true);
    s.child.kill("SIGTERM"); // exits 0, as a service does when something else stops it
    await until("the restart", () => lines.includes(`svc is back: http://127.0.0.1:${port}`));
    expect(lines[0]).toBe("svc exited with status 0 without being asked to stop; restarting it in 0.1 s (restart 1)");
    s.child.kill("SIGKILL");
    await until("the second restart", () => lines.filter((l) => l.startsWith("svc is back")).length === 2);
    expect(lines[2]).toBe(
      "svc exited with signal SIGKILL without being asked to stop; restarting it in 0.2 s (restart 2)",
    );
    await sup.stopAll();
    expect(lines.at(-1)).toMatch(/^svc {6}stopped \(status 0, \d+\.\d s\)$/);
  });

  it("stops every service on one Ctrl-C to the terminal's process group: one SIGTERM each, one line each", async () => {
    const env = { ...process.env, PORT_A: String(await freePort()), PORT_B: String(await freePort()) };
    // detached: the launcher leads its own process group, as a shell's foreground job does.
    launcher = spawn(process.execPath, [LAUNCHER], { env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    launcher.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
    });
    const exited = new Promise<number | null>((r) => launcher?.once("exit", (code) => r(code)));
    await until("ready", () => out.includes("ready "));
    // What the terminal does on Ctrl-C: SIGINT to every process of the foreground group.
    process.kill(-(launcher.pid as number), "SIGINT");
    expect(await exited).toBe(0);
    const after = out.slice(out.indexOf("Stopping"));
    expect(after).not.toContain("second signal");
    expect(after).not.toContain("exited");
    const stopped = after.split("\n").filter((l) => l.includes("stopped"));
    expect(stopped.map((l) => l.slice(0, 9)).sort()).toEqual(["a        ", "b        "]);
    for (const l of stopped) expect(l).toMatch(/stopped \(status 0, /);
  });

  it("leaves no service running when the launcher itself is killed", async () => {
    const env = { ...process.env, PORT_A: String(await freePort()), PORT_B: String(await freePort()) };
    launcher = spawn(process.execPath, [LAUNCHER], { env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    launcher.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
    });
    await until("ready", () => /ready \d+ \d+\n/.test(out));
    const pids = (out.match(/ready (\d+) (\d+)/) as RegExpMatchArray).slice(1).map(Number);
    expect(pids.every(alive)).toBe(true);
    launcher.kill("SIGKILL");
    await until("the services to stop", () => !pids.some(alive));
  });
});
