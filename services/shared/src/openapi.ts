// The published contract of a service: its zod route schemas turned into an OpenAPI 3.1 document
// by @fastify/swagger (through fastify-type-provider-zod's transforms), served at /openapi.json,
// with a browsable reference page at /docs (Swagger UI, its assets served from the installed
// package: no CDN). The checked-in copies live in docs/openapi/ (`npm run openapi` regenerates them;
// a test fails when they drift from what the code serves).
import fastifySwagger from "@fastify/swagger";
import fastifySwaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from "fastify-type-provider-zod";
import { z } from "zod";

/** A named schema of a document (`components.schemas`): its id, and a description. */
export interface NamedSchema {
  id?: string | undefined;
  description?: string;
  [key: string]: unknown;
}

/**
 * Each service names its shared schemas in a registry of its own (not zod's global one), so a
 * process that loads two services' schemas (a test, the generator) still documents each service
 * with its own schemas only.
 */
export function schemaRegistry() {
  return z.registry<NamedSchema>();
}
export type SchemaRegistry = ReturnType<typeof schemaRegistry>;

export interface OpenApiOptions {
  title: string;
  description: string;
  /** The document's version (the service's API version, not the package's). */
  version: string;
  /** The service's named schemas (schemaRegistry()). */
  schemas: SchemaRegistry;
  /** Security schemes by name (e.g. a bearer key); applied to routes that name them. */
  securitySchemes?: Record<string, { type: "http"; scheme: "bearer"; description?: string }>;
  tags?: { name: string; description: string }[];
  /**
   * Whether to serve the browsable /docs page too (default true). An internal port's document
   * (the routes other Capstan processes call there) is served at /openapi.json without one.
   */
  page?: boolean;
}

/**
 * Registers the document generator on the root context (fastify-plugin: every route registered
 * after it, in any child plugin, is collected) plus GET /openapi.json and the /docs page. Register
 * it before the service's route plugins. A service registers it twice: on its public app (the
 * published contract) and on its internal app (the internal port's routes, documented apart).
 */
export const openApi = fp<OpenApiOptions>(
  async (app, opts) => {
    await app.register(fastifySwagger, {
      openapi: {
        openapi: "3.1.0",
        info: { title: opts.title, description: opts.description, version: opts.version },
        components: { securitySchemes: opts.securitySchemes ?? {} },
        tags: opts.tags ?? [],
      },
      transform: createJsonSchemaTransform({ schemaRegistry: opts.schemas, skipList: [] }),
      transformObject: createJsonSchemaTransformObject({ schemaRegistry: opts.schemas }),
    });
    if (opts.page !== false) await app.register(fastifySwaggerUi, { routePrefix: "/docs", staticCSP: true });
    app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  },
  { name: "capstan-openapi" },
);

/** The document an app serves (after ready()), as the checked-in copy is written: stable JSON. */
export async function openApiDocument(app: FastifyInstance): Promise<string> {
  await app.ready();
  return `${JSON.stringify(app.swagger(), null, 2)}\n`;
}

const STATUS_TEXT: Record<number, string> = {
  400: "Bad request: the body or a parameter is invalid",
  401: "Missing, unknown or expired key",
  403: "The key may not do this (scope or client address)",
  404: "Not found",
  405: "Method not allowed on this path",
  408: "The time given ran out (the request's own timeout, or the service's deadline for it); retry, or allow more time",
  413: "The request body is too large",
  415: "The body is not JSON",
  429: "Rate limit reached (Retry-After says when to retry)",
  500: "Internal error (logged; no detail is given)",
  502: "A dependency failed",
  503: "Unavailable for now (a dependency is down or the process is stopping); retry",
  504: "A dependency did not answer in time",
};

/** Route `response` entries for error statuses, all in the service's one error shape. */
export function errorResponses<Schema, S extends number>(
  schema: Schema,
  ...statuses: S[]
): Record<S, { description: string; content: { "application/json": { schema: Schema } } }> {
  return describedErrorResponses(
    schema,
    Object.fromEntries(statuses.map((s) => [s, undefined])) as Record<S, undefined>,
  );
}

/**
 * The same, with a service's own description of some statuses (e.g. what its 403 means, from
 * its error registry); the others get the generic text.
 */
export function describedErrorResponses<Schema, S extends number>(
  schema: Schema,
  descriptions: Record<S, string | undefined>,
): Record<S, { description: string; content: { "application/json": { schema: Schema } } }> {
  return Object.fromEntries(
    Object.entries<string | undefined>(descriptions).map(([s, text]) => [
      s,
      {
        description: text ?? STATUS_TEXT[Number(s)] ?? `HTTP ${s}`,
        content: { "application/json": { schema } },
      },
    ]),
  ) as Record<S, { description: string; content: { "application/json": { schema: Schema } } }>;
}
