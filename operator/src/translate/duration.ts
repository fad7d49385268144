// Go durations as Kubernetes writes them ("90s", "1h30m", "2160h", "1.5h", "500ms").
const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export function parseDuration(text: string): number {
  const re = /([0-9]+(?:\.[0-9]+)?)(ns|us|ms|s|m|h)/g;
  let total = 0;
  let consumed = 0;
  for (const m of text.matchAll(re)) {
    total += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
    consumed += m[0].length;
  }
  if (consumed !== text.length || text.length === 0) throw new Error(`invalid duration "${text}"`);
  return total;
}
