// The gateway's internal API, on the internal port only (with /metrics and the health checks; a
// NetworkPolicy keeps it inside the platform), read by the operator and the console. Nothing here
// carries a key or a prompt.
//   GET /internal/v1/upstreams[?agent=ns/name]   this replica's circuit breaker of every Agent
//                                                upstream it has called
//   GET /internal/v1/budget?channel=ns/name      the channel's budget spend in the current period
//   GET /internal/v1/usage?namespace=ns[&channel=name][&hours=24]
//                                                hourly tokens and requests per channel, agent,
//                                                upstream and model (Redis: every replica's),
//                                                with a cost where the Agent prices the model
// Without Redis the budget and usage answers are 503 (there is nothing shared to read).
// Schema first: each route's query is validated and its answer serialised by the wire schemas
// (@capstan/shared/api usage.ts) that the console's and the operator's clients parse them with.
import { budgetAnswerSchema, upstreamsAnswerSchema, usageAnswerSchema } from "@capstan/shared/api";
import type { ResourceView } from "@capstan/shared/resource-view";
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { UpstreamRouter } from "../agents/router.ts";
import { GatewayError } from "../errors.ts";
import { errorResponses } from "../http/schemas.ts";
import { withCost } from "../limiter/usage-cost.ts";
import type { UsageReader } from "../limiter/usage-reader.ts";

export interface InternalRouteOptions {
  router: UpstreamRouter;
  usage: UsageReader | undefined;
  view: ResourceView;
}

const channelId = z.string().regex(/^[a-z0-9][-a-z0-9.]*\/[a-z0-9][-a-z0-9.]*$/, "channel must be namespace/name");
const usageQuery = z.object({
  namespace: z.string().regex(/^[a-z0-9][-a-z0-9]*$/, "namespace must be a namespace name"),
  channel: z.string().optional(),
  hours: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 90)
    .default(24),
});

const budgetQuery = z.object({ channel: channelId });
const upstreamsQuery = z.object({ agent: z.string().optional() });

function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const r = schema.safeParse(value);
  if (!r.success) throw new GatewayError("invalid_request", { detail: r.error.issues[0]?.message ?? "bad query" });
  return r.data;
}

/** A route's validation by `schema` with this API's own refusal (invalid_request naming the first issue). */
function validatorOf(schema: z.ZodType) {
  return () => (value: unknown) => {
    try {
      return { value: parse(schema, value) };
    } catch (err) {
      return { error: err as Error };
    }
  };
}

export const internalRoutes: FastifyPluginAsync<InternalRouteOptions> = async (app, opts) => {
  const reader = () => {
    if (!opts.usage) throw new GatewayError("usage_unavailable");
    return opts.usage;
  };

  const typed = app.withTypeProvider<ZodTypeProvider>();
  const tags = ["internal"];
  const upstreams = {
    tags,
    querystring: upstreamsQuery,
    response: { 200: upstreamsAnswerSchema, ...errorResponses(400, 500) },
  };
  typed.get("/upstreams", { schema: upstreams, validatorCompiler: validatorOf(upstreamsQuery) }, async (req) => {
    const { agent } = req.query;
    const all = opts.router.states();
    return { upstreams: agent !== undefined ? all.filter((s) => s.agent === agent) : all };
  });

  const budget = {
    tags,
    querystring: budgetQuery,
    response: { 200: budgetAnswerSchema, ...errorResponses(400, 404, 500, 503) },
  };
  typed.get("/budget", { schema: budget, validatorCompiler: validatorOf(budgetQuery) }, async (req) => {
    const id = req.query.channel;
    const [namespace, name] = id.split("/") as [string, string];
    const channel = opts.view.get("AccessChannel", namespace, name);
    if (!channel) throw new GatewayError("not_found", { method: "GET", url: `channel ${id}` });
    const spend = await reader().budget({ id, tpm: channel.spec.tpm, budget: channel.spec.budget });
    return { budget: spend ?? null };
  });

  const usage = {
    tags,
    querystring: usageQuery,
    response: { 200: usageAnswerSchema, ...errorResponses(400, 500, 503) },
  };
  typed.get("/usage", { schema: usage, validatorCompiler: validatorOf(usageQuery) }, async (req) => {
    const q = req.query;
    const channels = opts.view
      .list("AccessChannel")
      .filter((c) => c.metadata.namespace === q.namespace && (!q.channel || c.metadata.name === q.channel))
      .map((c) => `${q.namespace}/${c.metadata.name}`);
    const rows = await reader().usage(channels, q.hours);
    return { hours: q.hours, usage: withCost(rows, opts.view, q.namespace) };
  });
};
