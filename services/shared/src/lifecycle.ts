// Graceful stop of a process: the first SIGTERM or SIGINT runs `stop` once (closing servers,
// finishing in-flight work, flushing traces), then the process exits. A stop that fails or
// outlives the grace period still ends the process, with status 1, before Kubernetes' own
// terminationGracePeriodSeconds (30 s by default) would kill it mid-way.
import type { Logger } from "./logger.ts";

export const DEFAULT_STOP_GRACE_MS = 25_000;

export function stopOnSignals(
  stop: (signal: NodeJS.Signals) => Promise<void>,
  opts: { graceMs?: number; logger?: Logger } = {},
): void {
  const graceMs = opts.graceMs ?? DEFAULT_STOP_GRACE_MS;
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    opts.logger?.info({ signal }, "shutting down");
    const timer = setTimeout(() => {
      opts.logger?.error({ graceMs }, "shutdown outlived its grace period; exiting");
      process.exit(1);
    }, graceMs);
    timer.unref();
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
