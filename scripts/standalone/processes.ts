// Runs the data-plane services as child processes (the same `src/main.ts` each image runs), with
// their output prefixed, and keeps them running:
// - every exit is reported with its status or signal, status 0 included, and the service is started
//   again after a backoff (1 s, doubling to 30 s; back to 1 s after a minute of running);
// - each child runs in its own process group, so a Ctrl-C in the terminal reaches the launcher only
//   and each service gets exactly one SIGTERM from stopAll (a second signal would make a service
//   exit 1 mid-shutdown), which reports one line per service;
// - child-guard.ts, preloaded in each child, stops it when the launcher disappears (even on SIGKILL),
//   so no service outlives its launcher.
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";

export interface ServiceSpec {
  name: string;
  entry: string;
  url: string;
  /** Added to the launcher's environment; undefined removes a variable. */
  env: Record<string, string | undefined>;
  /** Readiness probe path, polled after each restart to say the service is back. */
  readyPath: string;
}

export interface Service extends ServiceSpec {
  child: ChildProcess;
  /** Exits so far (restarts = exits while running). */
  restarts: number;
}

export interface SupervisorOptions {
  say: (line: string) => void;
  /** Child output lines, already prefixed. */
  print?: (line: string) => void;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** A service that ran this long before exiting restarts after the initial backoff again. */
  stableAfterMs?: number;
  /** How long stopAll waits for a service's own shutdown before SIGKILL. */
  stopTimeoutMs?: number;
}

const GUARD = new URL("./child-guard.ts", import.meta.url).pathname;

/** "status 0", "status 1", "signal SIGKILL". */
export function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return code !== null ? `status ${code}` : `signal ${signal ?? "unknown"}`;
}

/** The delay before restart number `attempt` (1-based): initial × 2^(attempt−1), at most max. */
export function backoffMs(attempt: number, initialMs: number, maxMs: number): number {
  return Math.min(maxMs, initialMs * 2 ** Math.max(0, attempt - 1));
}

export class Supervisor {
  readonly services: Service[] = [];
  private stopping = false;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly attempts = new Map<string, number>();
  private readonly opts: Required<SupervisorOptions>;

  constructor(opts: SupervisorOptions) {
    this.opts = {
      print: (line) => process.stdout.write(`${line}\n`),
      initialBackoffMs: 1000,
      maxBackoffMs: 30_000,
      stableAfterMs: 60_000,
      stopTimeoutMs: 10_000,
      ...opts,
    };
    // Whatever ends the launcher, no child is left running.
    process.on("exit", () => {
      for (const s of this.services)
        if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill("SIGKILL");
    });
  }

  start(spec: ServiceSpec): Service {
    const service: Service = { ...spec, child: this.spawn(spec), restarts: 0 };
    this.services.push(service);
    this.watch(service);
    return service;
  }

  private spawn(spec: ServiceSpec): ChildProcess {
    const env = { ...process.env, ...spec.env };
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
    const child = spawn(process.execPath, ["--import", GUARD, spec.entry], {
      env,
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      detached: true,
    });
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue;
      createInterface(stream).on("line", (line) => this.opts.print(`${spec.name.padEnd(8)}| ${line}`));
    }
    return child;
  }

  private watch(service: Service): void {
    const child = service.child;
    const started = Date.now();
    child.once("exit", (code, signal) => {
      if (this.stopping || service.child !== child) return; // stopAll reports it
      service.restarts += 1;
      const stable = Date.now() - started >= this.opts.stableAfterMs;
      const attempt = stable ? 1 : (this.attempts.get(service.name) ?? 0) + 1;
      this.attempts.set(service.name, attempt);
      const delay = backoffMs(attempt, this.opts.initialBackoffMs, this.opts.maxBackoffMs);
      this.opts.say(
        `${service.name} exited with ${describeExit(code, signal)} without being asked to stop; ` +
          `restarting it in ${formatDelay(delay)} (restart ${service.restarts})`,
      );
      this.timers.set(
        service.name,
        setTimeout(() => {
          this.timers.delete(service.name);
          if (this.stopping) return;
          service.child = this.spawn(service);
          this.watch(service);
          void waitReady(service, 300_000).then((ok) => {
            if (ok && service.child.exitCode === null) this.opts.say(`${service.name} is back: ${service.url}`);
          });
        }, delay),
      );
    });
  }

  /** Stops every service (one SIGTERM each), one line per service with how it ended. */
  async stopAll(): Promise<void> {
    this.stopping = true;
    for (const t of this.timers.values()) clearTimeout(t);
    await Promise.all(this.services.map((s) => this.stopOne(s)));
  }

  /** Ends every service now (a second Ctrl-C). */
  killAll(): void {
    for (const s of this.services)
      if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill("SIGKILL");
  }

  private async stopOne(s: Service): Promise<void> {
    const child = s.child;
    const name = s.name.padEnd(8);
    if (child.exitCode !== null || child.signalCode !== null) {
      this.opts.say(`${name} stopped (it had exited with ${describeExit(child.exitCode, child.signalCode)})`);
      return;
    }
    const started = Date.now();
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      child.once("exit", (code, signal) => resolve([code, signal])),
    );
    const timer = setTimeout(() => child.kill("SIGKILL"), this.opts.stopTimeoutMs);
    child.kill("SIGTERM");
    const [code, signal] = await exited;
    clearTimeout(timer);
    const took = `${((Date.now() - started) / 1000).toFixed(1)} s`;
    const forced = signal === "SIGKILL" ? `, killed after ${this.opts.stopTimeoutMs / 1000} s` : "";
    this.opts.say(`${name} stopped (${describeExit(code, signal)}, ${took}${forced})`);
  }
}

function formatDelay(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** Polls GET <url><readyPath> until it answers 200, the process exits, or timeoutMs passes. */
export async function waitReady(service: Service, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  const child = service.child;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) return false;
    try {
      const res = await fetch(service.url + service.readyPath, { signal: AbortSignal.timeout(2000) });
      await res.body?.cancel();
      if (res.ok) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}
