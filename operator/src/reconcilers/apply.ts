// Applies desired objects with server-side apply, skipping those the cache shows up to date.

import type { KubeObject, ResourceType } from "@capstan/shared/kube";
import type { Informer } from "../kube/informer.ts";
import { upToDate } from "../translate/common.ts";
import type { OperatorContext } from "./context.ts";

export async function applyAll(
  ctx: OperatorContext,
  items: { type: ResourceType; desired: KubeObject; cache: Informer<KubeObject> }[],
): Promise<number> {
  let writes = 0;
  for (const { type, desired, cache } of items) {
    const live = cache.get(desired.metadata.namespace as string, desired.metadata.name);
    if (upToDate(live, desired)) continue;
    await ctx.client.apply(type, desired);
    writes += 1;
  }
  return writes;
}
