// Search keys: the list (with rotation advice past 90 days), create (the CRD's zod schema plus the
// IP/CIDR check the CRD's CEL rule makes), delete, and the key (Add key / Rotate key, see keys.ts).
import { API_VERSION, KINDS, searchKeySpec } from "@capstan/shared/api";
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { badCidrs } from "../cidr.ts";
import { type ConsoleContext, checkName, sessionOf } from "../context.ts";
import { errors } from "../errors.ts";
import { issueOrReveal, keyRevealed } from "../keys.ts";
import { readyOf } from "../ready.ts";
import type { KubeObject } from "../user-api.ts";
import {
  createBody,
  deletedSchema,
  itemsOf,
  keyBody,
  nsNameParams,
  nsParams,
  revealedKeySchema,
  type SearchKeyRow,
  searchKeyRowSchema,
} from "../wire.ts";

const PLURAL = KINDS.SearchKey.plural;
/** Rotation about every 90 days is advised (reference 2.2). */
export const ROTATION_ADVICE_DAYS = 90;
const DAY_MS = 86_400_000;

export function searchKeyRow(o: KubeObject, now = Date.now()): SearchKeyRow {
  const spec = (o.spec ?? {}) as Record<string, unknown>;
  const status = (o.status ?? {}) as Record<string, unknown>;
  const issued = (status.rotatedAt ?? status.validFrom ?? o.metadata.creationTimestamp) as string | undefined;
  const ageDays = issued ? Math.floor((now - new Date(issued).getTime()) / DAY_MS) : 0;
  return {
    name: o.metadata.name,
    keyName: spec.keyName as string,
    knowledgeIds: (spec.knowledgeIds as string[] | undefined) ?? [],
    validFrom: (status.validFrom ?? spec.validFrom ?? null) as string | null,
    validUntil: (spec.validUntil ?? null) as string | null,
    allowedCIDRs: (spec.allowedCIDRs as string[] | undefined) ?? [],
    rotation: (spec.rotation as Record<string, unknown> | undefined) ?? null,
    keyPrefix: (status.keyPrefix as string | undefined) ?? null,
    endpoint: (status.endpoint as string | undefined) ?? null,
    keySupplied: Boolean(spec.keySecretRef),
    keyRevealed: keyRevealed(o),
    keyAgeDays: ageDays,
    rotationAdvised: !spec.rotation && ageDays >= ROTATION_ADVICE_DAYS,
    ready: readyOf(o),
  };
}

export function parseSearchKeySpec(spec: unknown) {
  const parsed = searchKeySpec.safeParse(spec);
  if (!parsed.success) {
    throw errors.invalid(parsed.error.issues.map((i) => `${i.path.join(".") || "spec"}: ${i.message}`).join("; "));
  }
  const bad = badCidrs(parsed.data.allowedCIDRs ?? []);
  if (bad.length > 0) throw errors.invalid(`allowedCIDRs: not an IP address or CIDR: ${bad.join(", ")}`);
  return parsed.data;
}

export function searchKeyRoutes(plain: FastifyInstance, ctx: ConsoleContext): void {
  const app = plain.withTypeProvider<ZodTypeProvider>();
  const list = { params: nsParams, response: { 200: itemsOf(searchKeyRowSchema) } };
  app.get("/api/namespaces/:ns/searchkeys", { schema: list }, async (req) => {
    const { api } = await sessionOf(ctx, req);
    const list = await api.list(PLURAL, checkName("namespace", req.params.ns));
    return { items: list.items.map((o) => searchKeyRow(o)) };
  });

  const create = { params: nsParams, body: createBody, response: { 201: searchKeyRowSchema } };
  app.post("/api/namespaces/:ns/searchkeys", { schema: create }, async (req, reply) => {
    const { api } = await sessionOf(ctx, req);
    const ns = checkName("namespace", req.params.ns);
    const created = await api.create(PLURAL, ns, {
      apiVersion: API_VERSION,
      kind: "SearchKey",
      metadata: { name: checkName("key name", req.body.name), namespace: ns },
      spec: parseSearchKeySpec(req.body.spec),
    });
    reply.code(201);
    return searchKeyRow(created);
  });

  const remove = { params: nsNameParams, response: { 200: deletedSchema } };
  app.delete("/api/namespaces/:ns/searchkeys/:name", { schema: remove }, async (req) => {
    const { api } = await sessionOf(ctx, req);
    await api.remove(PLURAL, checkName("namespace", req.params.ns), req.params.name);
    return { deleted: req.params.name };
  });

  const key = { params: nsNameParams, body: keyBody, response: { 200: revealedKeySchema } };
  app.post("/api/namespaces/:ns/searchkeys/:name/key", { schema: key }, async (req, reply) => {
    const { api } = await sessionOf(ctx, req);
    const shown = await issueOrReveal(api, PLURAL, checkName("namespace", req.params.ns), req.params.name, {
      rotate: req.body?.rotate === true,
      waitSeconds: ctx.config.keyWaitSeconds,
      secretSuffix: "search-key",
    });
    reply.header("cache-control", "no-store");
    return { ...shown, endpoint: shown.endpoint ?? ctx.config.searchUrl ?? null };
  });
}
