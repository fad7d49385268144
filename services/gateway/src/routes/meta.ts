// GET /api/v1/models (the agent bound to the key, so SDKs and tools that list models work),
// GET /api/v1/models/:model, and GET /api/v1/history (the key's channel's kept exchanges, newest
// first, paged with ?limit= and ?before=<cursor>).
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import type { Gateway } from "../app.ts";
import type { ResolvedChannel } from "../channels.ts";
import { paramOf } from "../chat-request.ts";
import { GatewayError } from "../errors.ts";
import { authenticate, inRequestContext } from "../http/request-context.ts";
import { RedisUnavailable } from "../redis/breaker.ts";

// An Agent read from a file has no creationTimestamp: its `created` is when this gateway first
// saw it (a real time, stable while the process runs), never 0.
const firstSeen = new Map<string, number>();

function createdOf(channel: ResolvedChannel): number {
  const created = Date.parse(channel.agent?.metadata.creationTimestamp ?? "");
  if (Number.isFinite(created)) return Math.floor(created / 1000);
  const id = `${channel.namespace}/${channel.agentName}`;
  let seen = firstSeen.get(id);
  if (seen === undefined) {
    seen = Math.floor(Date.now() / 1000);
    firstSeen.set(id, seen);
  }
  return seen;
}

function modelOf(channel: ResolvedChannel) {
  return { id: channel.agentName, object: "model", created: createdOf(channel), owned_by: channel.namespace };
}

const historyQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  before: z
    .string()
    .regex(/^\d+-\d+$/, "before must be a cursor from a previous page")
    .optional(),
});

function channelOf(req: FastifyRequest): ResolvedChannel {
  const channel = req.capstan?.channel;
  if (!channel) throw new GatewayError("invalid_api_key");
  return channel;
}

export function registerMetaRoutes(app: FastifyInstance, gateway: Gateway): void {
  const onRequest = [authenticate(gateway)];

  app.get("/api/v1/models", { onRequest }, async (req) => {
    const channel = channelOf(req);
    return { object: "list", data: channel.agent ? [modelOf(channel)] : [] };
  });

  app.get<{ Params: { model: string } }>("/api/v1/models/:model", { onRequest }, async (req) => {
    const channel = channelOf(req);
    if (!channel.agent || req.params.model !== channel.agentName) {
      throw new GatewayError("model_not_found", { model: req.params.model.slice(0, 256) }, { param: "model" });
    }
    return modelOf(channel);
  });

  app.get("/api/v1/history", { onRequest }, (req) =>
    inRequestContext(req, async () => {
      const channel = channelOf(req);
      const query = historyQuery.safeParse(req.query);
      if (!query.success) {
        const issue = query.error.issues[0];
        throw new GatewayError(
          "invalid_request",
          { detail: issue?.message ?? "bad query" },
          { param: paramOf(issue?.path ?? []) },
        );
      }
      const page = channel.keepHistory
        ? await gateway.history.list(channel.id, query.data).catch((err: unknown) => {
            if (err instanceof RedisUnavailable) throw new GatewayError("history_unavailable");
            throw err;
          })
        : { data: [], has_more: false };
      return { object: "list", keep_history: channel.keepHistory, ...page };
    }),
  );
}
