// What the span exporter (trace-export.ts) has sent since the process started, kept apart from it
// so that metrics.ts can read it without loading OpenTelemetry's exporter packages into a process
// that exports nothing. Every registry createRegistry() makes reports it (metrics.ts).

/** Export attempts by outcome: `ok`, `http_<status>`, `timeout`, `error`. */
export const exportAttempts = new Map<string, number>();
/** Attempts that were retries of an earlier one. */
export const exportRetries = { count: 0 };

export function countExportAttempt(outcome: string): void {
  exportAttempts.set(outcome, (exportAttempts.get(outcome) ?? 0) + 1);
}
