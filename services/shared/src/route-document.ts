// The OpenAPI document of a listener that serves none (the console's /api, which only its own page
// calls): its route registrations are recorded as they are made (collectRoutes), and
// routeDocument() registers them again on a bare app with @fastify/swagger, as openApi does for
// the published documents. `npm run openapi` writes it to docs/openapi/internal/.
import fastifySwagger from "@fastify/swagger";
import Fastify, { type FastifyInstance, type RouteOptions } from "fastify";
import {
  createJsonSchemaTransform,
  createJsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
} from "fastify-type-provider-zod";

/** The route registrations of each listener given to collectRoutes. */
const collectedRoutes = new WeakMap<FastifyInstance, RouteOptions[]>();

/**
 * Records every route registered on `app` from now on, in any child plugin (an onRoute hook,
 * which Fastify adds at once, so routes added directly on the app are seen too), for the OpenAPI
 * document of a listener that does not serve one (the console calls it on its app). Nothing else
 * is added to the listener.
 */
export function collectRoutes(app: FastifyInstance): void {
  const routes: RouteOptions[] = [];
  collectedRoutes.set(app, routes);
  app.addHook("onRoute", (route) => {
    routes.push(route);
  });
}

/**
 * The OpenAPI document of a listener given to collectRoutes, as the checked-in copy is written:
 * its routes (path, method, schema) registered again, with no handler, on a bare app that has
 * @fastify/swagger, as the public documents are made (openApi). Schemas are inlined (a service's
 * named schemas name its public document's). A security scheme a route names is declared as in
 * every Capstan document: a bearer token.
 */
export async function routeDocument(
  listener: FastifyInstance,
  info: { title: string; description: string; version: string },
): Promise<string> {
  const routes = collectedRoutes.get(listener);
  if (!routes) throw new Error("routeDocument needs a listener given to collectRoutes");
  await listener.ready();
  const securitySchemes: Record<string, { type: "http"; scheme: "bearer" }> = {};
  const docs = Fastify({ exposeHeadRoutes: false });
  docs.setValidatorCompiler(validatorCompiler);
  docs.setSerializerCompiler(serializerCompiler);
  await docs.register(fastifySwagger, {
    openapi: { openapi: "3.1.0", info, components: { securitySchemes } },
    transform: createJsonSchemaTransform({ skipList: [] }),
    transformObject: createJsonSchemaTransformObject({}),
  });
  for (const route of routes) {
    // HEAD answers are Fastify's own for each GET route; the public documents omit them too.
    const methods = [route.method].flat().filter((m) => m !== "HEAD");
    if (methods.length === 0) continue;
    for (const group of (route.schema as { security?: Record<string, unknown>[] } | undefined)?.security ?? []) {
      for (const name of Object.keys(group)) securitySchemes[name] = { type: "http", scheme: "bearer" };
    }
    // `hide` keeps a route out of a public document; every route of this listener belongs in its own.
    const schema = { ...route.schema, hide: false };
    docs.route({ method: methods, url: route.url, schema, handler: async () => undefined });
  }
  try {
    await docs.ready();
    return `${JSON.stringify(docs.swagger(), null, 2)}\n`;
  } finally {
    await docs.close();
  }
}
