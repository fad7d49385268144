// Usage per channel over time, for the channels the user may list in the namespace (the list is
// asked of the API server with their token, so RBAC decides whose numbers they see).
import type { FastifyInstance } from "fastify";
import { type ConsoleContext, checkName, sessionOf } from "../context.ts";
import { errors } from "../errors.ts";
import type { UsageRecorder } from "../usage.ts";

export function usageRoutes(app: FastifyInstance, ctx: ConsoleContext, usage: UsageRecorder): void {
  app.get<{ Params: { ns: string } }>("/api/namespaces/:ns/usage", async (req) => {
    const { api } = sessionOf(ctx, req);
    const ns = checkName("namespace", req.params.ns);
    if (!usage.configured) throw errors.notConfigured("reading the gateway's metrics (CAPSTAN_GATEWAY_METRICS_URLS)");
    const visible = new Set((await api.list("accesschannels", ns)).items.map((c) => `${ns}/${c.metadata.name}`));
    await usage.refresh();
    return {
      warning: usage.lastError ?? null,
      channels: [...visible].map((id) => id.slice(ns.length + 1)),
      points: usage.points.map((p) => ({
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
