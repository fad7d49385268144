// The calendar periods of token budgets, in UTC, without I/O: a day starts at midnight, a week on
// Monday at midnight, a month on its first day at midnight. The period's start names its Redis
// key; its end is the Retry-After of a refused request and where the key's lifetime ends.
import type { BudgetPeriod } from "@capstan/shared/api";

export interface PeriodBounds {
  /** The start as a date, e.g. "2027-01-01": part of the Redis key. */
  id: string;
  startMs: number;
  endMs: number;
}

export function periodOf(period: BudgetPeriod, nowMs: number): PeriodBounds {
  const d = new Date(nowMs);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  let start: number;
  let end: number;
  if (period === "month") {
    start = Date.UTC(y, m, 1);
    end = Date.UTC(y, m + 1, 1);
  } else {
    const day = Date.UTC(y, m, d.getUTCDate());
    // getUTCDay: Sunday 0 … Saturday 6; weeks start on Monday.
    start = period === "day" ? day : day - ((d.getUTCDay() + 6) % 7) * 86_400_000;
    end = start + (period === "day" ? 1 : 7) * 86_400_000;
  }
  return { id: new Date(start).toISOString().slice(0, 10), startMs: start, endMs: end };
}
