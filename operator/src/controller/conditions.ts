// metav1.Condition bookkeeping, as apimachinery's meta.SetStatusCondition: lastTransitionTime
// changes only when status changes, so a status recomputed from the same facts is byte-identical
// and the reconciler writes nothing.
import type { Condition } from "@capstan/shared/api";

export interface ConditionInput {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
}

export function setConditions(
  current: Condition[] | undefined,
  wanted: ConditionInput[],
  generation: number | undefined,
  now: Date,
): Condition[] {
  const out: Condition[] = [];
  for (const w of wanted) {
    const prev = current?.find((c) => c.type === w.type);
    out.push({
      type: w.type,
      status: w.status,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
      lastTransitionTime:
        prev && prev.status === w.status ? prev.lastTransitionTime : now.toISOString().replace(/\.\d{3}Z$/, "Z"),
      reason: w.reason,
      message: w.message,
    });
  }
  return out;
}

export function findCondition(conds: Condition[] | undefined, type: string): Condition | undefined {
  return conds?.find((c) => c.type === type);
}

/** Deep equality of JSON values, ignoring key order and undefined members. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => jsonEqual(v, bb[i]));
  }
  const ak = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const bk = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ak.length !== bk.length) return false;
  return ak.every((k) => jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** Removes undefined members (JSON has none), so a status compares equal to what the API returns. */
export function compact<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** Kubernetes time: RFC 3339 in seconds. */
export function kubeTime(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, "Z");
}
