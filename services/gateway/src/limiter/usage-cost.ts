// The cost of usage rows from the prices their Agent declares (spec.prices, per million tokens),
// as it is now: a price changed today re-prices earlier hours too (the rows keep tokens, not money).

import type { UsageRow } from "@capstan/shared/api";
import type { ResourceView } from "@capstan/shared/resource-view";

export function withCost(rows: readonly UsageRow[], view: ResourceView, namespace: string): UsageRow[] {
  return rows.map((row) => {
    const price = view.get("Agent", namespace, row.agent)?.spec.prices?.find((p) => p.model === row.model);
    if (!price) return row;
    const amount = (row.prompt * price.promptPerMillion + row.completion * price.completionPerMillion) / 1e6;
    return { ...row, cost: { amount: Math.round(amount * 1e6) / 1e6, currency: price.currency } };
  });
}
