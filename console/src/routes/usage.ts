// Usage per channel over time, for the channels the user may list in the namespace (the list is
// asked of the API server with their token, so RBAC decides whose numbers they see). The numbers
// are every gateway replica's (usage-source.ts picks Prometheus, the replicas or fixed URLs); the
// hourly tokens per agent, upstream and model come from the gateway's usage API (usage-hourly.ts).
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { type ConsoleContext, checkName, sessionOf } from "../context.ts";
import { errors } from "../errors.ts";
import type { UsageSource } from "../usage.ts";
import type { HourlyUsage } from "../usage-hourly.ts";
import { hourlyQuery, hourlyUsageSchema, nsParams, usageSchema } from "../wire.ts";

export function usageRoutes(
  plain: FastifyInstance,
  ctx: ConsoleContext,
  usage: UsageSource | undefined,
  hourly: HourlyUsage | undefined,
): void {
  const app = plain.withTypeProvider<ZodTypeProvider>();
  // Tokens and requests per hour, channel, agent, upstream and model (kept in Redis by the gateway).
  app.get(
    "/api/namespaces/:ns/usage/hourly",
    { schema: { params: nsParams, querystring: hourlyQuery, response: { 200: hourlyUsageSchema } } },
    async (req) => {
      const { api } = await sessionOf(ctx, req);
      const ns = checkName("namespace", req.params.ns);
      if (!hourly) {
        throw errors.notConfigured(
          "reading the gateway replicas (CAPSTAN_GATEWAY_METRICS_SERVICE or CAPSTAN_GATEWAY_METRICS_URLS)",
        );
      }
      const hours = Math.min(24 * 90, req.query.hours);
      const visible = new Set((await api.list("accesschannels", ns)).items.map((c) => `${ns}/${c.metadata.name}`));
      let rows: Awaited<ReturnType<HourlyUsage["read"]>>;
      try {
        rows = await hourly.read(ns, hours);
      } catch (err) {
        throw errors.upstream("the gateway's usage API", (err as Error).message);
      }
      return {
        hours,
        rows: rows
          .filter((r) => visible.has(r.channel))
          .map((r) => ({ ...r, channel: r.channel.slice(ns.length + 1) })),
      };
    },
  );

  const usageSchemas = { params: nsParams, response: { 200: usageSchema } };
  app.get("/api/namespaces/:ns/usage", { schema: usageSchemas }, async (req) => {
    const { api } = await sessionOf(ctx, req);
    const ns = checkName("namespace", req.params.ns);
    if (!usage) {
      throw errors.notConfigured(
        "reading the gateway's metrics (CAPSTAN_CONSOLE_PROMETHEUS_URL, CAPSTAN_GATEWAY_METRICS_SERVICE or CAPSTAN_GATEWAY_METRICS_URLS)",
      );
    }
    const visible = new Set((await api.list("accesschannels", ns)).items.map((c) => `${ns}/${c.metadata.name}`));
    let reading: Awaited<ReturnType<UsageSource["read"]>>;
    try {
      reading = await usage.read(ns);
    } catch (err) {
      throw errors.upstream(usage.describe, (err as Error).message);
    }
    return {
      warning: reading.warning ?? null,
      channels: [...visible].map((id) => id.slice(ns.length + 1)),
      points: reading.points.map((p) => ({
        at: p.at,
        latencySum: p.latencySum,
        latencyCount: p.latencyCount,
        channels: Object.fromEntries(
          Object.entries(p.channels)
            .filter(([id]) => visible.has(id))
            .map(([id, v]) => [id.slice(ns.length + 1), v]),
        ),
      })),
    };
  });
}
