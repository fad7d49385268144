// The gateway's internal API, on the internal port only (with /metrics and the health checks; a
// NetworkPolicy keeps it inside the platform): GET /internal/v1/upstreams, this replica's circuit
// breaker of every Agent upstream it has called (the operator and the console read it). Nothing
// here carries a key or a prompt.
import type { FastifyPluginAsync } from "fastify";
import type { UpstreamRouter } from "../agents/router.ts";

export interface InternalRouteOptions {
  router: UpstreamRouter;
}

export const internalRoutes: FastifyPluginAsync<InternalRouteOptions> = async (app, opts) => {
  app.get("/upstreams", async (req) => {
    const agent = (req.query as { agent?: unknown }).agent;
    const all = opts.router.states();
    return { upstreams: typeof agent === "string" ? all.filter((s) => s.agent === agent) : all };
  });
};
