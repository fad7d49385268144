// Turns what a running process exported before and during a fault (two readings of its /metrics)
// into promtool input series, so the rule tests run on the names, labels and values the code
// really produces rather than on series written by hand. Pure translation.
//
// The timeline, one sample a minute: `healthy` minutes in which each counter grows by what the
// first reading holds (the healthy traffic, once a minute), then `fault` minutes in which it grows
// by what the second reading added (the faulty traffic, once a minute). Gauges hold the first
// reading's value, then the second's. A series the process only created during the fault is
// missing (`_`) while healthy. The scrape's labels (job, namespace, instance) are added to each.
import { parseSeries } from "../metrics/exposition.ts";

export interface InputSeries {
  series: string;
  values: string;
}

/** `# TYPE` of every metric family: counter, gauge, histogram, summary. */
function familyTypes(text: string): Map<string, string> {
  const types = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(m[1] as string, m[2] as string);
  return types;
}

/** Whether a sample grows only (a counter, or a histogram's or summary's buckets, sum and count). */
function cumulative(name: string, types: Map<string, string>): boolean {
  if (types.get(name) === "counter") return true;
  const family = name.replace(/_(bucket|sum|count)$/, "");
  return family !== name && ["histogram", "summary"].includes(types.get(family) ?? "");
}

const quote = (v: string) => `"${v.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;

function selector(name: string, labels: Record<string, string>): string {
  const keys = Object.keys(labels).sort();
  return `${name}{${keys.map((k) => `${k}=${quote(labels[k] as string)}`).join(",")}}`;
}

/** Every series of the second reading, as promtool input over healthy + fault minutes. */
export function faultTimeline(
  before: string,
  during: string,
  scrape: Record<string, string>,
  minutes: { healthy: number; fault: number },
): InputSeries[] {
  const types = familyTypes(during);
  const key = (name: string, labels: Record<string, string>) => selector(name, labels);
  const first = new Map(parseSeries(before).map((s) => [key(s.name, s.labels), s.value]));
  const out: InputSeries[] = [];
  for (const s of parseSeries(during)) {
    if (!Number.isFinite(s.value)) continue;
    const a = first.get(key(s.name, s.labels));
    const h = minutes.healthy;
    let values: string;
    if (cumulative(s.name, types)) {
      const step = s.value - (a ?? 0);
      const start = (a ?? 0) * (h - 1);
      const healthy = a === undefined ? `_x${h}` : `0+${a}x${h - 1}`;
      values = `${healthy} ${start + step}+${step}x${minutes.fault - 1}`;
    } else {
      values = `${a === undefined ? `_x${h}` : `${a}x${h - 1}`} ${s.value}x${minutes.fault - 1}`;
    }
    out.push({ series: selector(s.name, { ...s.labels, ...scrape }), values });
  }
  return out;
}
