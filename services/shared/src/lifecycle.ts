// Graceful stop of a process: the first SIGTERM or SIGINT runs `stop` once (closing servers,
// finishing in-flight work, flushing traces), then the process exits 0. A stop that fails or
// outlives the grace period still ends the process, with status 1, before Kubernetes' own
// terminationGracePeriodSeconds (30 s by default) would kill it mid-way; a second signal during
// the stop ends it at once, with status 1 (a second Ctrl-C forces the exit).
import type { Logger } from "./logger.ts";

export const DEFAULT_STOP_GRACE_MS = 25_000;

export function stopOnSignals(
  stop: (signal: NodeJS.Signals) => Promise<void>,
  opts: { graceMs?: number; logger?: Logger } = {},
): void {
  const graceMs = opts.graceMs ?? DEFAULT_STOP_GRACE_MS;
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      opts.logger?.warn({ signal }, "second signal during shutdown; exiting now");
      process.exit(1);
    }
    stopping = true;
    opts.logger?.info({ signal }, "shutting down");
    // Referenced on purpose: a stop that awaits something holding no handle must not end
    // quietly with status 0 once everything else has closed.
    setTimeout(() => {
      opts.logger?.error({ graceMs }, "shutdown outlived its grace period; exiting");
      process.exit(1);
    }, graceMs);
    stop(signal).then(
      () => process.exit(0),
      (err: unknown) => {
        opts.logger?.error({ err: (err as Error).message }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, onSignal);
}
