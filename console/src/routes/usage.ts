// Usage per channel over time, for the channels the user may list in the namespace (the list is
// asked of the API server with their token, so RBAC decides whose numbers they see). The numbers
// are every gateway replica's (usage-source.ts picks Prometheus, the replicas or fixed URLs).
import type { FastifyInstance } from "fastify";
import { type ConsoleContext, checkName, sessionOf } from "../context.ts";
import { errors } from "../errors.ts";
import type { UsageSource } from "../usage.ts";

export function usageRoutes(app: FastifyInstance, ctx: ConsoleContext, usage: UsageSource | undefined): void {
  app.get<{ Params: { ns: string } }>("/api/namespaces/:ns/usage", async (req) => {
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
