// GET /api/v1/models (the agent bound to the key, so SDKs and tools that list models work),
// GET /api/v1/models/:model, and GET /api/v1/history (the key's channel's kept exchanges, newest
// first, paged with ?limit= and ?before=<cursor>): a plugin registered inside /api/v1 behind its
// auth hook.
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { ResolvedChannel } from "../channels.ts";
import { GatewayError } from "../errors.ts";
import type { HistoryStore } from "../history/store.ts";
import { inRequestContext } from "../http/request-context.ts";
import { errorResponses, model, modelList } from "../http/schemas.ts";
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
  return { id: channel.agentName, object: "model" as const, created: createdOf(channel), owned_by: channel.namespace };
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

export interface MetaRouteOptions {
  history: HistoryStore;
}

export const metaRoutes: FastifyPluginAsync<MetaRouteOptions> = async (plain, gateway) => {
  const app = plain.withTypeProvider<ZodTypeProvider>();
  const security = [{ channelKey: [] }];

  app.get(
    "/models",
    {
      schema: {
        operationId: "listModels",
        summary: "The agent bound to the key, as a one-model list",
        tags: ["models"],
        security,
        response: { 200: modelList, ...errorResponses(401, 500) },
      },
    },
    async (req) => {
      const channel = channelOf(req);
      return { object: "list" as const, data: channel.agent ? [modelOf(channel)] : [] };
    },
  );

  app.get(
    "/models/:model",
    {
      schema: {
        operationId: "retrieveModel",
        summary: "The agent bound to the key, by name",
        tags: ["models"],
        security,
        params: z.object({ model: z.string() }),
        response: { 200: model, ...errorResponses(401, 404, 500) },
      },
    },
    async (req) => {
      const channel = channelOf(req);
      if (!channel.agent || req.params.model !== channel.agentName) {
        throw new GatewayError("model_not_found", { model: req.params.model.slice(0, 256) }, { param: "model" });
      }
      return modelOf(channel);
    },
  );

  // Not in the published contract (an operator's tool, not part of the chat API).
  app.get("/history", { schema: { hide: true, querystring: historyQuery } }, (req) =>
    inRequestContext(req, async () => {
      const channel = channelOf(req);
      const page = channel.keepHistory
        ? await gateway.history.list(channel.id, req.query).catch((err: unknown) => {
            if (err instanceof RedisUnavailable) throw new GatewayError("history_unavailable");
            throw err;
          })
        : { data: [], has_more: false };
      return { object: "list", keep_history: channel.keepHistory, ...page };
    }),
  );
};
