// Translates the zod schemas of kinds.ts into CustomResourceDefinitions (pure: no I/O).
// The output is a structural OpenAPI v3 schema: every node typed, no $ref/anyOf, defaults and
// x-kubernetes-validations (CEL) carried over from the zod .default() and .meta() calls.
import { z } from "zod";
import { GROUP, VERSION } from "./common.ts";
import { KIND_NAMES, KINDS, type KindInfo } from "./kinds.ts";

type JsonSchema = Record<string, unknown>;

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** Keywords zod may emit that a structural CRD schema must not (or need not) carry. */
const DROPPED = new Set(["$schema", "$id", "id"]);
/** Keywords whose value is data, not schemas: copied as they are. */
const VERBATIM = new Set(["default", "enum", "x-kubernetes-validations"]);
/** Keywords whose value maps names the author chose (any name, `id` too) to schemas. */
const NAMED_SCHEMAS = new Set(["properties", "patternProperties"]);

/**
 * Removes what zod emits but a structural CRD schema must not (or need not) carry. node is a
 * schema or an array of schemas; the keyword filters apply to schema keywords only, never to the
 * names inside properties (a field named `id` or `default` is a field like any other).
 */
function structural(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(structural);
  if (node === null || typeof node !== "object") return node;
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(node as JsonSchema)) {
    if (DROPPED.has(k)) continue;
    if (k === "additionalProperties" && v === false) continue; // pruning does this; strict decoding reports it
    if ((k === "minimum" && v === -MAX_SAFE) || (k === "maximum" && v === MAX_SAFE)) continue;
    out[k] = VERBATIM.has(k) ? v : NAMED_SCHEMAS.has(k) ? namedSchemas(v) : structural(v);
  }
  // date-time strings: the API server checks format: date-time itself; zod's long regex adds nothing.
  if (out.format === "date-time") delete out.pattern;
  return out;
}

function namedSchemas(map: unknown): unknown {
  if (map === null || typeof map !== "object") return map;
  return Object.fromEntries(Object.entries(map).map(([name, schema]) => [name, structural(schema)]));
}

export function openApiSchema(schema: z.ZodType): JsonSchema {
  return structural(
    z.toJSONSchema(schema, { target: "openapi-3.0", io: "input", unrepresentable: "throw" }),
  ) as JsonSchema;
}

export function crdFor(info: KindInfo): JsonSchema {
  const spec = openApiSchema(info.spec);
  const status = openApiSchema(info.status);
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: `${info.plural}.${GROUP}`,
      labels: { "app.kubernetes.io/part-of": "capstan" },
    },
    spec: {
      group: GROUP,
      scope: "Namespaced",
      names: {
        kind: info.kind,
        listKind: `${info.kind}List`,
        plural: info.plural,
        singular: info.singular,
        shortNames: info.shortNames,
        categories: ["capstan"],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: info.columns,
          schema: {
            openAPIV3Schema: {
              type: "object",
              description: `${info.kind} (capstan.dev). See docs/resources.md.`,
              required: ["spec"],
              properties: {
                apiVersion: { type: "string" },
                kind: { type: "string" },
                metadata: { type: "object" },
                spec,
                status,
              },
            },
          },
        },
      ],
    },
  };
}

export function allCrds(): { kind: string; plural: string; crd: JsonSchema }[] {
  return KIND_NAMES.map((name) => {
    const info: KindInfo = KINDS[name];
    return { kind: info.kind, plural: info.plural, crd: crdFor(info) };
  });
}
