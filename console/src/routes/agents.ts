// Agents and Scrapers: their settings and health, read with the user's token.
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { type ConsoleContext, checkName, sessionOf } from "../context.ts";
import { readyOf } from "../ready.ts";
import type { KubeObject } from "../user-api.ts";
import { itemsOf, nsParams, type ResourceRow, resourceRowSchema } from "../wire.ts";

const row = (o: KubeObject): ResourceRow => ({
  name: o.metadata.name,
  spec: o.spec ?? {},
  status: o.status ?? {},
  ready: readyOf(o),
});

export function agentRoutes(plain: FastifyInstance, ctx: ConsoleContext): void {
  const app = plain.withTypeProvider<ZodTypeProvider>();
  const schema = { params: nsParams, response: { 200: itemsOf(resourceRowSchema) } };
  for (const plural of ["agents", "scrapers"] as const) {
    app.get(`/api/namespaces/:ns/${plural}`, { schema }, async (req) => {
      const { api } = await sessionOf(ctx, req);
      const list = await api.list(plural, checkName("namespace", req.params.ns));
      return { items: list.items.map(row) };
    });
  }
}
