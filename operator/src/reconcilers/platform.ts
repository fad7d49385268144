// The shared data plane: the internal token and key-verifier Secrets (generated once), the mirror of every Agent's
// provider key in the gateway's namespace, and the gateway and search Deployments and Services.
// One work-queue key, PLATFORM_KEY, enqueued at start and by every event that changes its inputs.
import { randomBytes } from "node:crypto";
import { type Agent, agentUpstreams } from "@capstan/shared/api";
import {
  CONFIG_MAP,
  DEPLOYMENT,
  isStatus,
  type KubeObject,
  type OwnerReference,
  SECRET,
  SERVICE,
} from "@capstan/shared/kube";
import { jsonEqual } from "../controller/conditions.ts";
import type { Reconcile } from "../controller/controller.ts";
import { PART_OF } from "../translate/common.ts";
import {
  gatewayObjects,
  INTERNAL_TOKEN_KEY,
  KEY_VERIFIER_KEY,
  PROVIDER_KEYS_SECRET,
  type ProviderKeyRef,
  providerKeysSecret,
  searchObjects,
  searchRefusal,
} from "../translate/workloads.ts";
import { applyAll } from "./apply.ts";
import type { OperatorContext } from "./context.ts";

export const PLATFORM_KEY = "_platform/data-plane";

/** A Secret of 32 random bytes in the operator's namespace, created once and never overwritten. */
async function ensureGeneratedSecret(
  ctx: OperatorContext,
  owner: OwnerReference | undefined,
  name: string,
  dataKey: string,
  component: string,
): Promise<void> {
  const ns = ctx.config.namespace;
  if (ctx.informers.secrets.get(ns, name)) return;
  try {
    await ctx.client.create(SECRET, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name,
        namespace: ns,
        labels: { ...PART_OF, "app.kubernetes.io/component": component },
        ...(owner ? { ownerReferences: [owner] } : {}),
      },
      type: "Opaque",
      data: { [dataKey]: Buffer.from(randomBytes(32).toString("base64url")).toString("base64") },
    });
  } catch (err) {
    if (!isStatus(err, 409)) throw err; // exists: never overwritten
  }
}

/** Provider keys the Agents reference, with their current values (base64), read live by name. */
async function providerKeys(ctx: OperatorContext): Promise<Map<ProviderKeyRef, string>> {
  const refs = new Map<string, ProviderKeyRef>();
  for (const agent of ctx.informers.agents.list() as Agent[]) {
    for (const u of agentUpstreams(agent.spec)) {
      const r = u.apiKeySecretRef;
      if (!r) continue;
      const ref = { namespace: agent.metadata.namespace ?? "default", secret: r.name, key: r.key };
      refs.set(`${ref.namespace}/${ref.secret}/${ref.key}`, ref);
    }
  }
  const out = new Map<ProviderKeyRef, string>();
  for (const ref of refs.values()) {
    const secret = await ctx.client.get<KubeObject & { data?: Record<string, string> }>(
      SECRET,
      ref.namespace,
      ref.secret,
    );
    const value = secret?.data?.[ref.key];
    if (value !== undefined) out.set(ref, value);
  }
  return out;
}

/**
 * The owner of the shared data plane: the chart's ConfigMap (config.ownerConfigMap), read once.
 * Not a controller reference: the ConfigMap does not manage them, it only ends their life.
 */
function ownerLookup(ctx: OperatorContext): () => Promise<OwnerReference | undefined> {
  let owner: OwnerReference | undefined;
  return async () => {
    const name = ctx.config.ownerConfigMap;
    if (!name || owner) return owner;
    const cm = await ctx.client.get<KubeObject>(CONFIG_MAP, ctx.config.namespace, name);
    if (!cm?.metadata.uid) {
      ctx.logger.warn({ configMap: name }, "owner ConfigMap not found: the data plane is applied without an owner");
      return undefined;
    }
    owner = { apiVersion: "v1", kind: "ConfigMap", name, uid: cm.metadata.uid };
    return owner;
  };
}

export function platformReconciler(ctx: OperatorContext): Reconcile {
  const ownerOf = ownerLookup(ctx);
  return async () => {
    const c = ctx.config;
    const owner = await ownerOf();
    await ensureGeneratedSecret(ctx, owner, c.internalTokenSecret, INTERNAL_TOKEN_KEY, "internal-token");
    await ensureGeneratedSecret(ctx, owner, c.keyVerifierSecret, KEY_VERIFIER_KEY, "key-verifier");
    const keys = await providerKeys(ctx);
    const mirror = providerKeysSecret(c, keys, owner);
    const cached = ctx.informers.secrets.get(c.namespace, PROVIDER_KEYS_SECRET) as
      | (KubeObject & { data?: Record<string, string> })
      | undefined;
    if (keys.size > 0 || cached) {
      if (!cached || !jsonEqual(cached.data ?? {}, mirror.data ?? {})) await ctx.client.apply(SECRET, mirror);
    }
    const [gwDeploy, gwSvc] = gatewayObjects(c, [...keys.keys()], owner);
    const [seDeploy, seSvc] = searchObjects(c, owner);
    const d = ctx.informers.deployments;
    const s = ctx.informers.services;
    // A refused search Deployment is left as it is (not applied, not scaled): the Service stays,
    // and a Warning Event on it plus an error log say why.
    const refusal = searchRefusal(c);
    await applyAll(ctx, [
      { type: DEPLOYMENT, desired: gwDeploy as KubeObject, cache: d },
      { type: SERVICE, desired: gwSvc as KubeObject, cache: s },
      ...(refusal ? [] : [{ type: DEPLOYMENT, desired: seDeploy as KubeObject, cache: d }]),
      { type: SERVICE, desired: seSvc as KubeObject, cache: s },
    ]);
    if (refusal) {
      ctx.logger.error({ reason: "SearchReplicasRefused" }, refusal);
      // The Event needs the Service's uid: until the cache has the Service, look again shortly.
      const svc = s.get(c.namespace, (seSvc as KubeObject).metadata.name);
      if (!svc) return { requeueAfterMs: 1000 };
      const regarding = { ...svc, apiVersion: "v1", kind: "Service" }; // list items carry no kind
      ctx.events.record(regarding, "Warning", "SearchReplicasRefused", "Apply", refusal);
    }
    return undefined;
  };
}
