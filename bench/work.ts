// What every benchmark shares so that it cannot silently measure nothing:
//  - `SMOKE`: the smoke mode (`--smoke` or BENCH_SMOKE=1): tiny sizes, seconds, the same code
//    path. The test command runs every benchmark this way (test/bench/), so a benchmark that
//    breaks fails the tests the day it breaks. Timings are never asserted there; only the work.
//  - `expectWork()`: a benchmark checks that it did the work it reports (non-empty results with
//    the expected documents, the expected number of upstream calls, pages, chunks or objects)
//    and stops with an error naming what it did not see, before it prints a figure.
// A search that finds nothing answers in microseconds: a figure taken from it looks plausible
// and means nothing. That is what these two exist to catch.

/** True when the benchmark runs in its smoke mode. */
export const SMOKE = process.argv.includes("--smoke") || process.env.BENCH_SMOKE === "1";

/** The full-size value, or the smoke mode's tiny one. */
export function sized<T>(full: T, smoke: T): T {
  return SMOKE ? smoke : full;
}

/** A benchmark that did not do the work it was about to report. */
export class MissingWorkError extends Error {
  override name = "MissingWorkError";
}

/**
 * Stops the benchmark unless `ok`: `what` names what was expected and not seen, e.g.
 * "every search returns hits of the knowledge base (query 3 returned none)".
 */
export function expectWork(ok: boolean, what: string): asserts ok {
  if (!ok) throw new MissingWorkError(`benchmark did not do its work: ${what}`);
}

/** expectWork for a count: `seen` must equal `expected` ("<what>: expected N, saw M"). */
export function expectCount(what: string, seen: number, expected: number): void {
  expectWork(seen === expected, `${what}: expected ${expected}, saw ${seen}`);
}

/** expectWork for a lower bound: at least `min` ("<what>: expected at least N, saw M"). */
export function expectAtLeast(what: string, seen: number, min: number): void {
  expectWork(seen >= min, `${what}: expected at least ${min}, saw ${seen}`);
}

/** The line every benchmark prints last when its work was checked; the smoke tests look for it. */
export function workChecked(summary: string): void {
  process.stdout.write(`work checked: ${summary}\n`);
}
