// Unknown keys in a configuration object (a config file, Helm values rendered into one, overrides):
// every key the schema does not know is an error naming the key's path and the nearest valid key,
// so a typo (`gatewy:`) stops start-up instead of being dropped in silence.
import type { z } from "zod";

interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  options?: z.ZodType[];
  element?: z.ZodType;
  catchall?: z.ZodType;
}

const defOf = (s: z.ZodType) => (s as unknown as { _zod: { def: Def } })._zod.def;

/** The object schema under wrappers (optional, default, prefault, nullable, pipe, transform). */
function objectShape(s: z.ZodType): { shape: Record<string, z.ZodType>; open: boolean } | undefined {
  const d = defOf(s);
  switch (d.type) {
    case "object":
      return { shape: d.shape ?? {}, open: d.catchall !== undefined && defOf(d.catchall).type !== "never" };
    case "optional":
    case "default":
    case "prefault":
    case "nullable":
    case "readonly":
    case "catch":
      return d.innerType ? objectShape(d.innerType) : undefined;
    case "pipe":
      return d.in ? objectShape(d.in) : undefined;
    default:
      return undefined;
  }
}

function arrayElement(s: z.ZodType): z.ZodType | undefined {
  const d = defOf(s);
  if (d.type === "array") return d.element;
  if (["optional", "default", "prefault", "nullable"].includes(d.type) && d.innerType) return arrayElement(d.innerType);
  return undefined;
}

/** Edit distance, for the "did you mean" hint. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j] as number;
      row[j] = Math.min(cur + 1, (row[j - 1] as number) + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length] as number;
}

export function nearest(key: string, valid: string[]): string | undefined {
  let best: string | undefined;
  let bestD = Number.POSITIVE_INFINITY;
  for (const v of valid) {
    const d = distance(key.toLowerCase(), v.toLowerCase());
    if (d < bestD) {
      best = v;
      bestD = d;
    }
  }
  return best;
}

/** One line per unknown key: `path.key: unknown key (did you mean path.valid?)`. */
export function unknownKeys(schema: z.ZodType, value: unknown, path: string[] = []): string[] {
  const obj = objectShape(schema);
  if (obj && value && typeof value === "object" && !Array.isArray(value)) {
    const out: string[] = [];
    const valid = Object.keys(obj.shape);
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const child = obj.shape[k];
      if (child) out.push(...unknownKeys(child, v, [...path, k]));
      else if (!obj.open) {
        const hint = nearest(k, valid);
        const at = [...path, k].join(".");
        out.push(`${at}: unknown key${hint ? ` (did you mean ${[...path, hint].join(".")}?)` : ""}`);
      }
    }
    return out;
  }
  const element = arrayElement(schema);
  if (element && Array.isArray(value)) {
    return value.flatMap((v, i) => unknownKeys(element, v, [...path.slice(0, -1), `${path.at(-1) ?? ""}[${i}]`]));
  }
  return [];
}
