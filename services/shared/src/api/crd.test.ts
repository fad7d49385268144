import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { readResources } from "../resource-view/file-source.ts";
import { allCrds, openApiSchema } from "./crd.ts";
import { KIND_NAMES } from "./kinds.ts";
import { renderCrds } from "./render.ts";

const crdsDir = fileURLToPath(new URL("../../../../crds/", import.meta.url));
const examplesDir = fileURLToPath(new URL("../../../../examples/", import.meta.url));

describe("generated CRDs", () => {
  it("crds/*.yaml are exactly what the zod schemas generate (run `npm run crds` after a schema change)", () => {
    const rendered = renderCrds();
    const onDisk = readdirSync(crdsDir)
      .filter((f) => f.endsWith(".yaml"))
      .sort();
    expect(onDisk).toEqual(rendered.map((r) => r.file).sort());
    for (const { file, yaml } of rendered) {
      expect(readFileSync(crdsDir + file, "utf8"), `crds/${file} drifted from the schema source`).toBe(yaml);
    }
  });

  it("every schema node is typed (structural) and carries no $ref, anyOf or oneOf", () => {
    const walk = (node: unknown, path: string): void => {
      if (node === null || typeof node !== "object") return;
      const obj = node as Record<string, unknown>;
      for (const bad of ["$ref", "anyOf", "oneOf", "allOf"]) expect(obj[bad], `${path} has ${bad}`).toBeUndefined();
      if (obj.properties || obj.items || obj.additionalProperties)
        expect(obj.type, `${path} has no type`).toBeDefined();
      for (const [k, v] of Object.entries(obj.properties ?? {})) {
        expect((v as { type?: string }).type, `${path}.${k} has no type`).toBeDefined();
        walk(v, `${path}.${k}`);
      }
      if (obj.items) walk(obj.items, `${path}[]`);
      if (typeof obj.additionalProperties === "object") walk(obj.additionalProperties, `${path}{}`);
    };
    for (const { kind, crd } of allCrds()) {
      const version = (crd as { spec: { versions: { schema: { openAPIV3Schema: unknown }; subresources: unknown }[] } })
        .spec.versions[0];
      expect(version?.subresources).toEqual({ status: {} });
      expect((crd as { spec: { names: { categories: string[] } } }).spec.names.categories).toEqual(["capstan"]);
      walk(version?.schema.openAPIV3Schema, kind);
    }
  });
});

describe("openApiSchema", () => {
  it("keeps fields named like the keywords it drops or copies (id, $schema, default), at every depth", () => {
    const item = z.strictObject({ id: z.string(), default: z.strictObject({ id: z.int() }) });
    const schema = openApiSchema(
      z.strictObject({ id: z.string(), $schema: z.string(), items: z.array(item), byName: z.record(z.string(), item) }),
    );
    const itemSchema = {
      type: "object",
      properties: {
        id: { type: "string" },
        // a field named default is a schema like any other: its strict object loses additionalProperties too
        default: { type: "object", properties: { id: { type: "integer" } }, required: ["id"] },
      },
      required: ["id", "default"],
    };
    expect(schema).toEqual({
      type: "object",
      properties: {
        id: { type: "string" },
        $schema: { type: "string" },
        items: { type: "array", items: itemSchema },
        byName: { type: "object", additionalProperties: itemSchema },
      },
      required: ["id", "$schema", "items", "byName"],
    });
  });
});

describe("examples", () => {
  it("parse with the same schemas and cover every kind", () => {
    const resources = readResources([examplesDir]);
    expect(new Set(resources.map((r) => r.kind))).toEqual(new Set(KIND_NAMES));
    const channel = resources.find((r) => r.kind === "AccessChannel");
    expect(channel?.spec).toMatchObject({ qpm: 100, keepHistory: true });
  });
});
