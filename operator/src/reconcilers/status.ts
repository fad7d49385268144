// Status writes: only when the computed status differs from the cached one, through the status
// subresource with server-side apply. A resync that finds nothing new writes nothing.

import type { KubeObject, ResourceType } from "@capstan/shared/kube";
import { isStatus } from "@capstan/shared/kube";
import { compact, jsonEqual } from "../controller/conditions.ts";
import type { ObjectClient } from "../kube/client.ts";

export async function writeStatus(
  client: ObjectClient,
  type: ResourceType,
  obj: KubeObject,
  status: unknown,
): Promise<boolean> {
  if (jsonEqual(compact(obj.status ?? {}), compact(status))) return false;
  try {
    await client.applyStatus(type, obj.metadata.namespace as string, obj.metadata.name, status);
  } catch (err) {
    if (isStatus(err, 404)) return false; // deleted meanwhile
    throw err;
  }
  return true;
}
