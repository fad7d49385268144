// GET /health, the reference's liveness check (4.3), on the API's port and without a key: the
// process runs, and how its renderer and queue are doing. Readiness (/readyz, which fails while
// the renderer is down) is on the admin port.
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { Limiter } from "../../limiter.ts";
import { healthResponseSchema } from "../response-schemas.ts";

export interface HealthOptions {
  limiter: Limiter;
  rendererReady: () => boolean;
}

export const healthRoutes: FastifyPluginAsync<HealthOptions> = async (plain, { limiter, rendererReady }) => {
  const app = plain.withTypeProvider<ZodTypeProvider>();
  const startedAt = Date.now();
  app.get(
    "/health",
    {
      schema: {
        operationId: "health",
        summary: "Liveness: the process answers (no key needed)",
        tags: ["health"],
        security: [],
        response: { 200: healthResponseSchema },
      },
    },
    async () => ({
      status: "ok" as const,
      service: "capstan-scraper" as const,
      uptimeSeconds: Math.round((Date.now() - startedAt) / 1000),
      renderer: rendererReady() ? ("ready" as const) : ("not ready" as const),
      queue: { running: limiter.active, queued: limiter.queued, maxQueued: limiter.maxQueue },
    }),
  );
};
