// Access channels: the list, one channel, create (validated with the CRD's own zod schema), edit of
// QPM and expiry, expire now, delete, and the channel's key (Add key / Rotate key, see keys.ts).
import { accessChannelSpec } from "@capstan/shared/api";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { type ConsoleContext, checkName, sessionOf } from "../context.ts";
import { errors } from "../errors.ts";
import { issueOrReveal, keyRevealed } from "../keys.ts";
import { readyOf } from "../ready.ts";
import type { KubeObject } from "../user-api.ts";

const PLURAL = "accesschannels";
type Params = { ns: string; name: string };

/** What the list and the channel page show of a channel (never the key). */
export function channelRow(o: KubeObject) {
  const spec = (o.spec ?? {}) as Record<string, unknown>;
  const status = (o.status ?? {}) as Record<string, unknown>;
  return {
    name: o.metadata.name,
    namespace: o.metadata.namespace,
    channelName: spec.channelName,
    agent: (spec.agentRef as { name?: string } | undefined)?.name,
    qpm: spec.qpm ?? 100,
    expiresAt: spec.expiresAt ?? null,
    keepHistory: spec.keepHistory ?? false,
    keyPrefix: status.keyPrefix ?? null,
    endpoint: status.endpoint ?? null,
    keySupplied: Boolean(spec.keySecretRef),
    keyRevealed: keyRevealed(o),
    ready: readyOf(o),
    createdAt: o.metadata.creationTimestamp,
  };
}

const createBody = z.object({ name: z.string(), spec: z.record(z.string(), z.unknown()) });
const editBody = z.object({
  qpm: z.int().optional(),
  /** null removes the expiry. */
  expiresAt: z.string().nullable().optional(),
});

function parseSpec(spec: unknown) {
  const parsed = accessChannelSpec.safeParse(spec);
  if (!parsed.success) {
    throw errors.invalid(parsed.error.issues.map((i) => `${i.path.join(".") || "spec"}: ${i.message}`).join("; "));
  }
  return parsed.data;
}

export function channelRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  app.get<{ Params: { ns: string } }>("/api/namespaces/:ns/accesschannels", async (req) => {
    const { api } = await sessionOf(ctx, req);
    const list = await api.list(PLURAL, checkName("namespace", req.params.ns));
    return { items: list.items.map(channelRow) };
  });

  app.get<{ Params: Params }>("/api/namespaces/:ns/accesschannels/:name", async (req) => {
    const { api } = await sessionOf(ctx, req);
    return channelRow(await api.get(PLURAL, checkName("namespace", req.params.ns), req.params.name));
  });

  app.post<{ Params: { ns: string } }>("/api/namespaces/:ns/accesschannels", async (req, reply) => {
    const { api } = await sessionOf(ctx, req);
    const ns = checkName("namespace", req.params.ns);
    const body = createBody.safeParse(req.body);
    if (!body.success) throw errors.invalid("send { name, spec }");
    const spec = parseSpec(body.data.spec);
    const created = await api.create(PLURAL, ns, {
      apiVersion: "capstan.dev/v1alpha1",
      kind: "AccessChannel",
      metadata: { name: checkName("channel name", body.data.name), namespace: ns },
      spec,
    });
    reply.code(201);
    return channelRow(created);
  });

  app.patch<{ Params: Params }>("/api/namespaces/:ns/accesschannels/:name", async (req) => {
    const { api } = await sessionOf(ctx, req);
    const ns = checkName("namespace", req.params.ns);
    const body = editBody.safeParse(req.body);
    if (!body.success)
      throw errors.invalid(body.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "));
    const current = await api.get(PLURAL, ns, req.params.name);
    const next: Record<string, unknown> = { ...(current.spec ?? {}) };
    if (body.data.qpm !== undefined) next.qpm = body.data.qpm;
    if (body.data.expiresAt === null) delete next.expiresAt;
    else if (body.data.expiresAt !== undefined) next.expiresAt = body.data.expiresAt;
    parseSpec(next);
    const patch: Record<string, unknown> = {};
    if (body.data.qpm !== undefined) patch.qpm = body.data.qpm;
    if (body.data.expiresAt !== undefined) patch.expiresAt = body.data.expiresAt;
    return channelRow(await api.patch(PLURAL, ns, req.params.name, { spec: patch }));
  });

  // Expire now: the gateway rejects the key (401) from this instant on.
  app.post<{ Params: Params }>("/api/namespaces/:ns/accesschannels/:name/expire", async (req) => {
    const { api } = await sessionOf(ctx, req);
    const ns = checkName("namespace", req.params.ns);
    return channelRow(await api.patch(PLURAL, ns, req.params.name, { spec: { expiresAt: new Date().toISOString() } }));
  });

  app.delete<{ Params: Params }>("/api/namespaces/:ns/accesschannels/:name", async (req) => {
    const { api } = await sessionOf(ctx, req);
    await api.remove(PLURAL, checkName("namespace", req.params.ns), req.params.name);
    return { deleted: req.params.name };
  });

  app.post<{ Params: Params; Body: { rotate?: boolean } }>(
    "/api/namespaces/:ns/accesschannels/:name/key",
    async (req, reply) => {
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
    },
  );
}
