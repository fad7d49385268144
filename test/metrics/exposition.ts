// Reading Prometheus text exposition in tests: the series of every histogram and the label names
// they carry, checked against the labels Capstan allows on histograms (bounded sets of values).

/**
 * Labels a histogram may carry: each has a small, fixed set of values (a route pattern, a stage,
 * an outcome code, a controller name), never a channel, key, knowledge base or URL. `le` is the
 * bucket bound. `name`/`controller` are the operator's controllers (six).
 */
export const BOUNDED_HISTOGRAM_LABELS = new Set([
  "le",
  "method",
  "route",
  "mode",
  "stream",
  "outcome",
  "target",
  "stage",
  "backend",
  "controller",
  "name",
  "verb",
  // nodejs_gc_duration_seconds: the garbage collection kind (major, minor, incremental, weakcb).
  "kind",
  // The gateway's GenAI histograms (OpenTelemetry names): the operation (chat), the provider
  // (openai, capstan), input/output, an error code of the gateway's registry, and the provider's
  // model, capped at the first 20 distinct names ("other" after).
  "gen_ai_operation_name",
  "gen_ai_provider_name",
  "gen_ai_token_type",
  "error_type",
  "gen_ai_request_model",
]);

export interface Series {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Every sample line of an exposition as its metric name and labels. */
export function parseSeries(text: string): Series[] {
  const out: Series[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || line.trim() === "") continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(LABEL)) labels[l[1] as string] = l[2] as string;
    out.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return out;
}

/** The names declared `# TYPE <name> histogram`. */
export function histogramNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) histogram$/gm)) names.add(m[1] as string);
  return names;
}

/** The bucket series of every histogram, by histogram name. */
export function histogramBuckets(text: string): Map<string, Series[]> {
  const names = histogramNames(text);
  const out = new Map<string, Series[]>();
  for (const s of parseSeries(text)) {
    if (!s.name.endsWith("_bucket")) continue;
    const base = s.name.slice(0, -"_bucket".length);
    if (!names.has(base)) continue;
    out.set(base, [...(out.get(base) ?? []), s]);
  }
  return out;
}

/** "histogram{label}" for every label of a histogram outside BOUNDED_HISTOGRAM_LABELS. */
export function unboundedHistogramLabels(text: string): string[] {
  const bad = new Set<string>();
  for (const [name, series] of histogramBuckets(text)) {
    for (const s of series) {
      for (const label of Object.keys(s.labels)) {
        if (!BOUNDED_HISTOGRAM_LABELS.has(label)) bad.add(`${name}{${label}}`);
      }
    }
  }
  return [...bad].sort();
}

/** The number of bucket series of all histograms together (of those whose name matches). */
export function histogramSeriesCount(text: string, names = /./): number {
  let n = 0;
  for (const [name, series] of histogramBuckets(text)) if (names.test(name)) n += series.length;
  return n;
}
