// Child processes of the test ground: started with their output kept for diagnostics, stopped
// with SIGTERM then SIGKILL, and always killed when the test process exits.
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, mkdirSync } from "node:fs";
import { join } from "node:path";

export interface ManagedProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** The last lines the process printed (for error messages). */
  output(): string;
  stop(timeoutMs?: number): Promise<void>;
}

const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of live) child.kill("SIGKILL");
});

/**
 * `detached` starts the process in its own session (setsid), so a signal to the caller's process
 * group (a `timeout`, Ctrl-C) does not reach it and teardown can stop daemons in order.
 * With CAPSTAN_GROUND_LOGS set to a directory, each process's whole output is also appended to
 * `<dir>/<name>.log`, kept after the run (the in-memory tail keeps only the last lines).
 */
export function startProcess(
  name: string,
  cmd: string,
  args: string[],
  env?: NodeJS.ProcessEnv,
  opts: { detached?: boolean } = {},
): ManagedProcess {
  const child = spawn(cmd, args, {
    env: env ?? process.env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: opts.detached ?? false,
  });
  live.add(child);
  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    lines.push(...chunk.toString().split("\n"));
    if (lines.length > 200) lines.splice(0, lines.length - 200);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const logDir = process.env.CAPSTAN_GROUND_LOGS;
  if (logDir) {
    mkdirSync(logDir, { recursive: true });
    const file = createWriteStream(join(logDir, `${name}.log`), { flags: "a" });
    child.stdout?.pipe(file, { end: false });
    child.stderr?.pipe(file, { end: false });
    child.on("exit", () => file.end());
  }
  child.on("exit", () => live.delete(child));
  return {
    name,
    child,
    output: () => lines.slice(-40).join("\n"),
    stop: (timeoutMs = 10_000) =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
        child.once("exit", () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill("SIGTERM");
      }),
  };
}

/** Polls check() until it returns true; throws with the process output after timeoutMs. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  opts: { timeoutMs: number; proc?: ManagedProcess },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let lastError = "";
  while (Date.now() < deadline) {
    if (opts.proc && opts.proc.child.exitCode !== null) {
      throw new Error(
        `${opts.proc.name} exited with ${opts.proc.child.exitCode} before ${what}:\n${opts.proc.output()}`,
      );
    }
    try {
      if (await check()) return;
    } catch (err) {
      lastError = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `timed out after ${opts.timeoutMs} ms waiting for ${what} (${lastError})\n${opts.proc?.output() ?? ""}`,
  );
}
