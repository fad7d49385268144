// Runs the data-plane services as child processes (the same `src/main.ts` each image runs), with
// their output prefixed, and waits for each to answer its readiness probe.
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";

export interface Service {
  name: string;
  child: ChildProcess;
  url: string;
}

export function startService(name: string, entry: string, url: string, env: Record<string, string>): Service {
  const child = spawn(process.execPath, [entry], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  for (const stream of [child.stdout, child.stderr]) {
    if (!stream) continue;
    createInterface(stream).on("line", (line) => process.stdout.write(`${name.padEnd(8)}| ${line}\n`));
  }
  child.on("exit", (code, signal) => {
    if (code !== 0 && signal !== "SIGTERM") process.stdout.write(`${name.padEnd(8)}| exited (${code ?? signal})\n`);
  });
  return { name, child, url };
}

/** Polls GET <url><path> until it answers 200, the process exits, or timeoutMs passes. */
export async function waitReady(service: Service, path: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (service.child.exitCode !== null) return false;
    try {
      const res = await fetch(service.url + path, { signal: AbortSignal.timeout(2000) });
      if (res.ok) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

export async function stopAll(services: Service[]): Promise<void> {
  await Promise.all(
    services.map(
      (s) =>
        new Promise<void>((resolve) => {
          if (s.child.exitCode !== null) return resolve();
          const timer = setTimeout(() => s.child.kill("SIGKILL"), 5000);
          s.child.once("exit", () => {
            clearTimeout(timer);
            resolve();
          });
          s.child.kill("SIGTERM");
        }),
    ),
  );
}
