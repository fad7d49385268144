// The Ready condition of any Capstan resource, as the lists show it.
import type { KubeObject } from "./user-api.ts";

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

export function readyOf(o: KubeObject): { status: string; reason: string; message: string } {
  const conditions = ((o.status ?? {}) as { conditions?: Condition[] }).conditions ?? [];
  const c = conditions.find((x) => x.type === "Ready");
  return c
    ? { status: c.status, reason: c.reason ?? "", message: c.message ?? "" }
    : { status: "Unknown", reason: "Pending", message: "the operator has not reconciled this resource yet" };
}
