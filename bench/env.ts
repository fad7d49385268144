// Environment given to a benchmark's processes on its command line, for experiments and for
// before/after runs of settings that live outside the code (an image's ENV, a chart's NODE_OPTIONS):
//   BENCH_ENV="MALLOC_CONF=narenas:2 NODE_OPTIONS=--max-semi-space-size=4"
// Pairs are separated by spaces; a value runs to the next space (a value with spaces inside: use
// one variable per flag, e.g. NODE_OPTIONS with a single flag, or the benchmark's NODE_FLAGS).

/** `K=V K2=V2` as an object; an empty or missing text is {}. */
export function envPairs(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (text ?? "").split(" ").filter(Boolean)) {
    const at = pair.indexOf("=");
    if (at <= 0) throw new Error(`not a K=V pair: ${pair}`);
    out[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return out;
}
