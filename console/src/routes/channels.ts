// Access channels: the list, one channel, create (validated with the CRD's own zod schema), edit of
// QPM and expiry, expire now, delete, and the channel's key (Add key / Rotate key, see keys.ts).
import { API_VERSION, accessChannelSpec, KINDS } from "@capstan/shared/api";
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { type ConsoleContext, checkName, sessionOf } from "../context.ts";
import { errors } from "../errors.ts";
import { issueOrReveal, keyRevealed } from "../keys.ts";
import { readyOf } from "../ready.ts";
import type { KubeObject } from "../user-api.ts";
import {
  type ChannelRow,
  channelEditBody,
  channelRowSchema,
  createBody,
  deletedSchema,
  itemsOf,
  keyBody,
  nsNameParams,
  nsParams,
  revealedKeySchema,
} from "../wire.ts";

const PLURAL = KINDS.AccessChannel.plural;

/** What the list and the channel page show of a channel (never the key). */
export function channelRow(o: KubeObject): ChannelRow {
  const spec = (o.spec ?? {}) as Record<string, unknown>;
  const status = (o.status ?? {}) as Record<string, string | undefined>;
  return {
    name: o.metadata.name,
    namespace: o.metadata.namespace,
    channelName: spec.channelName as string,
    agent: (spec.agentRef as { name?: string } | undefined)?.name,
    qpm: (spec.qpm as number | undefined) ?? 100,
    expiresAt: (spec.expiresAt as string | undefined) ?? null,
    keepHistory: (spec.keepHistory as boolean | undefined) ?? false,
    keyPrefix: status.keyPrefix ?? null,
    endpoint: status.endpoint ?? null,
    keySupplied: Boolean(spec.keySecretRef),
    keyRevealed: keyRevealed(o),
    ready: readyOf(o),
    createdAt: o.metadata.creationTimestamp,
  };
}

function parseSpec(spec: unknown) {
  const parsed = accessChannelSpec.safeParse(spec);
  if (!parsed.success) {
    throw errors.invalid(parsed.error.issues.map((i) => `${i.path.join(".") || "spec"}: ${i.message}`).join("; "));
  }
  return parsed.data;
}

const one = { params: nsNameParams, response: { 200: channelRowSchema } };

export function channelRoutes(plain: FastifyInstance, ctx: ConsoleContext): void {
  const app = plain.withTypeProvider<ZodTypeProvider>();
  const list = { params: nsParams, response: { 200: itemsOf(channelRowSchema) } };
  app.get("/api/namespaces/:ns/accesschannels", { schema: list }, async (req) => {
    const { api } = await sessionOf(ctx, req);
    const list = await api.list(PLURAL, checkName("namespace", req.params.ns));
    return { items: list.items.map(channelRow) };
  });

  app.get("/api/namespaces/:ns/accesschannels/:name", { schema: one }, async (req) => {
    const { api } = await sessionOf(ctx, req);
    return channelRow(await api.get(PLURAL, checkName("namespace", req.params.ns), req.params.name));
  });

  const create = { params: nsParams, body: createBody, response: { 201: channelRowSchema } };
  app.post("/api/namespaces/:ns/accesschannels", { schema: create }, async (req, reply) => {
    const { api } = await sessionOf(ctx, req);
    const ns = checkName("namespace", req.params.ns);
    const spec = parseSpec(req.body.spec);
    const created = await api.create(PLURAL, ns, {
      apiVersion: API_VERSION,
      kind: "AccessChannel",
      metadata: { name: checkName("channel name", req.body.name), namespace: ns },
      spec,
    });
    reply.code(201);
    return channelRow(created);
  });

  app.patch("/api/namespaces/:ns/accesschannels/:name", { schema: { ...one, body: channelEditBody } }, async (req) => {
    const { api } = await sessionOf(ctx, req);
    const ns = checkName("namespace", req.params.ns);
    const body = req.body;
    const current = await api.get(PLURAL, ns, req.params.name);
    const next: Record<string, unknown> = { ...(current.spec ?? {}) };
    if (body.qpm !== undefined) next.qpm = body.qpm;
    if (body.expiresAt === null) delete next.expiresAt;
    else if (body.expiresAt !== undefined) next.expiresAt = body.expiresAt;
    parseSpec(next);
    const patch: Record<string, unknown> = {};
    if (body.qpm !== undefined) patch.qpm = body.qpm;
    if (body.expiresAt !== undefined) patch.expiresAt = body.expiresAt;
    return channelRow(await api.patch(PLURAL, ns, req.params.name, { spec: patch }));
  });

  // Expire now: the gateway rejects the key (401) from this instant on.
  app.post("/api/namespaces/:ns/accesschannels/:name/expire", { schema: one }, async (req) => {
    const { api } = await sessionOf(ctx, req);
    const ns = checkName("namespace", req.params.ns);
    return channelRow(await api.patch(PLURAL, ns, req.params.name, { spec: { expiresAt: new Date().toISOString() } }));
  });

  const remove = { params: nsNameParams, response: { 200: deletedSchema } };
  app.delete("/api/namespaces/:ns/accesschannels/:name", { schema: remove }, async (req) => {
    const { api } = await sessionOf(ctx, req);
    await api.remove(PLURAL, checkName("namespace", req.params.ns), req.params.name);
    return { deleted: req.params.name };
  });

  const key = { params: nsNameParams, body: keyBody, response: { 200: revealedKeySchema } };
  app.post("/api/namespaces/:ns/accesschannels/:name/key", { schema: key }, async (req, reply) => {
    const { api } = await sessionOf(ctx, req);
    const ns = checkName("namespace", req.params.ns);
    const shown = await issueOrReveal(api, PLURAL, ns, req.params.name, {
      rotate: req.body?.rotate === true,
      waitSeconds: ctx.config.keyWaitSeconds,
      secretSuffix: "chat-key",
    });
    // The key is in this one response only: never cached, never logged.
    reply.header("cache-control", "no-store");
    return {
      ...shown,
      endpoint: shown.endpoint ?? (ctx.config.gatewayUrl ? `${ctx.config.gatewayUrl}/api/v1` : null),
    };
  });
}
