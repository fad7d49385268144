// Agents and Scrapers: their settings and health, read with the user's token.
import type { FastifyInstance } from "fastify";
import { type ConsoleContext, checkName, sessionOf } from "../context.ts";
import { readyOf } from "../ready.ts";
import type { KubeObject } from "../user-api.ts";

const row = (o: KubeObject) => ({
  name: o.metadata.name,
  spec: o.spec ?? {},
  status: o.status ?? {},
  ready: readyOf(o),
});

export function agentRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  for (const plural of ["agents", "scrapers"] as const) {
    app.get<{ Params: { ns: string } }>(`/api/namespaces/:ns/${plural}`, async (req) => {
      const { api } = await sessionOf(ctx, req);
      const list = await api.list(plural, checkName("namespace", req.params.ns));
      return { items: list.items.map(row) };
    });
  }
}
