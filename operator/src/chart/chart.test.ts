// The chart's generated files match their sources (RBAC rules, CRDs), every value is documented
// with `## @param`, and the defaults are the secure ones.
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { DATA_PLANE_RULES } from "../rbac.ts";
import { chartFiles } from "./render.ts";

const chart = fileURLToPath(new URL("../../../charts/capstan/", import.meta.url));

describe("charts/capstan", () => {
  it("files/ are exactly what operator/src/rbac.ts and the CRD schemas generate (node operator/src/chart/generate.ts)", () => {
    const generated = chartFiles();
    for (const { path, text } of generated) expect(readFileSync(chart + path, "utf8"), `${path} drifted`).toBe(text);
    expect(readdirSync(`${chart}files/crds`).sort()).toEqual(
      generated
        .filter((f) => f.path.startsWith("files/crds/"))
        .map((f) => f.path.slice("files/crds/".length))
        .sort(),
    );
  });

  it("CRDs are kept on uninstall and updated on upgrade (templates, not crds/)", () => {
    for (const f of readdirSync(`${chart}files/crds`)) {
      const crd = parse(readFileSync(`${chart}files/crds/${f}`, "utf8"));
      expect(crd.kind).toBe("CustomResourceDefinition");
      expect(crd.metadata.annotations["helm.sh/resource-policy"]).toBe("keep");
    }
    expect(readFileSync(`${chart}templates/customresourcedefinitions.yaml`, "utf8")).toContain(
      '.Files.Glob "files/crds/*.yaml"',
    );
  });

  it("the data plane may only read the five kinds, never Secrets", () => {
    const rules = parse(readFileSync(`${chart}files/rbac/data-plane-rules.yaml`, "utf8"));
    expect(rules).toEqual(DATA_PLANE_RULES);
    for (const r of rules) {
      expect(r.verbs.every((v: string) => ["get", "list", "watch"].includes(v))).toBe(true);
      expect(r.resources).not.toContain("secrets");
    }
    for (const t of ["clusterrole.yaml", "clusterrole-data-plane.yaml", "role.yaml"]) {
      expect(readFileSync(`${chart}templates/${t}`, "utf8")).toMatch(/\.Files\.Get "files\/rbac\/[a-z-]+-rules\.yaml"/);
    }
  });

  it("every value is documented with ## @param", () => {
    const text = readFileSync(`${chart}values.yaml`, "utf8");
    const documented = new Set([...text.matchAll(/^\s*## @param ([\w.]+) /gm)].map((m) => m[1]));
    const missing: string[] = [];
    const walk = (node: unknown, path: string) => {
      if (documented.has(path)) return;
      if (node && typeof node === "object" && !Array.isArray(node) && Object.keys(node).length) {
        for (const [k, v] of Object.entries(node)) walk(v, path ? `${path}.${k}` : k);
      } else missing.push(path);
    };
    walk(parse(text), "");
    expect(missing).toEqual([]);
  });

  it("secure defaults: non-root, read-only root filesystem, no capabilities", () => {
    const values = parse(readFileSync(`${chart}values.yaml`, "utf8"));
    expect(values.operator.podSecurityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(values.operator.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(values.operator.leaderElection).toEqual({
      enabled: true,
      leaseDurationSeconds: 15,
      renewDeadlineSeconds: 10,
      retryPeriodSeconds: 2,
    });
    // The reference's names; no url: the platform Scraper's in-cluster Service, never 127.0.0.1.
    expect(values.scraping).toMatchObject({ enabled: true, url: "", timeout: 30, max_retries: 3 });
  });
});
