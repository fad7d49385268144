// The template variables of the chart's dashboards (charts/capstan/files/monitoring/dashboards/),
// as the tests use them: every panel query filters on `cluster`, `namespace` and `job` through
// Grafana's `$cluster`, `$namespace` and `$job`, each a multi-value variable whose "All" stands for
// the regex `.*` (which also matches a series without that label, as in a one-cluster Prometheus).
// `withVariables` puts values in as Grafana does before it sends a query; `selectorsOf` lists the
// metric selectors of a query, for the check that every one of them carries the three filters.

export const VARIABLES = ["cluster", "namespace", "job"] as const;
export type Variable = (typeof VARIABLES)[number];

/** Grafana's "All" for these variables (their `allValue`). */
export const ALL = ".*";

/** The query with each `$variable` replaced by its value (All unless given). */
export function withVariables(expr: string, values: Partial<Record<Variable, string>> = {}): string {
  return expr.replace(/\$(cluster|namespace|job)\b/g, (_, v: Variable) => values[v] ?? ALL);
}

export interface Selector {
  metric: string;
  /** The matchers between the braces, as written ("" when the name has none). */
  matchers: string;
}

/** PromQL words that are neither metrics nor functions (functions are followed by "("). */
const KEYWORDS = new Set(["and", "or", "unless", "bool", "offset", "inf", "nan"]);

/** Every metric selector of a PromQL expression: the metric's name and its matchers. */
export function selectorsOf(expr: string): Selector[] {
  const blocks: string[] = [];
  const text = expr
    // Matcher blocks out of the way first (their strings may hold anything), kept by index.
    .replace(/\{([^}]*)\}/g, (_, inner: string) => `{#${blocks.push(inner) - 1}}`)
    // Label lists of grouping and vector matching, range and subquery durations, numbers.
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/(?<![A-Za-z_:#\d])\d[\d.e+-]*/g, " ");
  const out: Selector[] = [];
  for (const m of text.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)\s*(\(|\{#(\d+)\})?/g)) {
    const [, name, next, block] = m as unknown as [string, string, string | undefined, string | undefined];
    if (next === "(" || KEYWORDS.has(name.toLowerCase())) continue;
    out.push({ metric: name, matchers: block === undefined ? "" : (blocks[Number(block)] ?? "") });
  }
  return out;
}

/** The variables a selector does not filter on (`<variable>=~"$<variable>"`). */
export function unfiltered(selector: Selector): Variable[] {
  return VARIABLES.filter((v) => !new RegExp(`\\b${v}\\s*=~\\s*"\\$${v}"`).test(selector.matchers));
}
