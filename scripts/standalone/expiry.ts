// When the keys the launcher prints stop working: an AccessChannel's spec.expiresAt, a SearchKey's
// spec.validFrom / spec.validUntil. Pure, so the wording and the boundaries are unit-tested; the
// launcher prints the warnings under the keys at start, after each change of the resource folder,
// and when a key crosses a boundary while it runs.
import type { AnyResource } from "@capstan/shared/api";

/** Keys expiring within this many days are called out (CAPSTAN_KEY_WARN_DAYS). */
export const DEFAULT_WARN_DAYS = 14;

export type KeyState = "valid" | "expiring" | "expired" | "not-yet-valid";

export interface KeyValidity {
  state: KeyState;
  /** The boundary the state refers to (expiry, or start of validity). */
  at?: Date;
}

const DAY = 86_400_000;

export function keyValidity(r: AnyResource, now: Date, warnDays = DEFAULT_WARN_DAYS): KeyValidity {
  let from: string | undefined;
  let until: string | undefined;
  if (r.kind === "AccessChannel") until = r.spec.expiresAt;
  else if (r.kind === "SearchKey") {
    from = r.spec.validFrom;
    until = r.spec.validUntil;
  } else return { state: "valid" };
  if (from && now < new Date(from)) return { state: "not-yet-valid", at: new Date(from) };
  if (!until) return { state: "valid" };
  const end = new Date(until);
  if (now >= end) return { state: "expired", at: end };
  if (end.getTime() - now.getTime() <= warnDays * DAY) return { state: "expiring", at: end };
  return { state: "valid", at: end };
}

function inWords(ms: number): string {
  if (ms >= 2 * DAY) return `${Math.floor(ms / DAY)} days`;
  const hours = Math.floor(ms / 3_600_000);
  if (hours >= 2) return `${hours} hours`;
  return `${Math.max(1, Math.ceil(ms / 60_000))} minutes`;
}

/** One line saying what is wrong and what to change, or undefined for a key that works. */
export function keyWarning(r: AnyResource, now: Date, resourcesDir: string, warnDays = DEFAULT_WARN_DAYS) {
  const v = keyValidity(r, now, warnDays);
  const field = r.kind === "AccessChannel" ? "spec.expiresAt" : "spec.validUntil";
  const where = `${r.kind} ${r.metadata.namespace ?? "default"}/${r.metadata.name}`;
  const at = v.at?.toISOString().replace(".000Z", "Z");
  const status = r.kind === "AccessChannel" ? "401" : "401 (SEARCH_ERR_UNAUTHENTICATED)";
  switch (v.state) {
    case "expired":
      return (
        `WARNING: the key of ${where} EXPIRED at ${at}: every request with it is answered ${status}. ` +
        `Change ${field} in ${resourcesDir} (the folder is watched; the same key keeps working once it is valid).`
      );
    case "expiring":
      return (
        `WARNING: the key of ${where} expires in ${inWords((v.at as Date).getTime() - now.getTime())} (${at}); ` +
        `change ${field} in ${resourcesDir} to keep it working.`
      );
    case "not-yet-valid":
      return `WARNING: the key of ${where} is not valid before ${at} (spec.validFrom): until then it is answered ${status}.`;
    default:
      return undefined;
  }
}

/** Milliseconds until the next boundary of any key (a change of state to announce), if any. */
export function nextBoundaryMs(resources: AnyResource[], now: Date, warnDays = DEFAULT_WARN_DAYS): number | undefined {
  const times: number[] = [];
  for (const r of resources) {
    if (r.kind === "AccessChannel" && r.spec.expiresAt) {
      const end = new Date(r.spec.expiresAt).getTime();
      times.push(end, end - warnDays * DAY);
    } else if (r.kind === "SearchKey") {
      if (r.spec.validFrom) times.push(new Date(r.spec.validFrom).getTime());
      if (r.spec.validUntil) {
        const end = new Date(r.spec.validUntil).getTime();
        times.push(end, end - warnDays * DAY);
      }
    }
  }
  const future = times.map((t) => t - now.getTime()).filter((d) => d > 0);
  return future.length > 0 ? Math.min(...future) : undefined;
}
