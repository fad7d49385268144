// The Tiltfile against the chart it installs (no Tilt here, so its two inputs are read from the
// file): the chart renders with the Tiltfile's --set values, and every image the Tiltfile builds
// appears where Tilt rewrites references — a container image for plain docker_build, an env
// value of a container for docker_build(match_in_env_vars=True).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { helmTemplate, parseRendered, type Rendered } from "./chart-kit.ts";

const tiltfile = readFileSync(fileURLToPath(new URL("../../Tiltfile", import.meta.url)), "utf8");
let home: string;

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "capstan-helm-tilt-"));
});

afterAll(() => {
  if (home) rmSync(home, { recursive: true, force: true });
});

/** The `set=[...]` list of the Tiltfile's helm() call. */
function tiltSetValues(): string[] {
  const call = /helm\('charts\/capstan'[\s\S]*?set=\[([\s\S]*?)\]\)\)/.exec(tiltfile)?.[1];
  if (!call) throw new Error("no helm('charts/capstan', ..., set=[...]) call in the Tiltfile");
  return [...call.matchAll(/'([^']+)'/g)].map((m) => m[1] as string);
}

/** docker_build image names, and whether each is matched in env values. */
function tiltBuilds(): { image: string; inEnv: boolean }[] {
  const builds: { image: string; inEnv: boolean }[] = [];
  for (const m of tiltfile.matchAll(/^\s*docker_build\(([^)]*)\)/gm)) {
    const args = m[1] as string;
    const inEnv = /match_in_env_vars=True/.test(args);
    const literal = /^'([^']+)',/.exec(args.trim())?.[1];
    if (literal) builds.push({ image: literal, inEnv });
    else {
      // docker_build('prefix' + target, ...) inside `for target in [...]`
      const prefix = /^'([^']+)' \+ target/.exec(args.trim())?.[1];
      const targets = /for target in \[([^\]]*)\]:\s*\n\s*docker_build\('[^']+' \+ target/.exec(tiltfile)?.[1];
      if (!prefix || !targets) throw new Error(`cannot read docker_build(${args})`);
      for (const t of targets.matchAll(/'([^']+)'/g)) builds.push({ image: prefix + t[1], inEnv });
    }
  }
  return builds;
}

const repo = (ref: string) => ref.replace(/:[^:/]+$/, "");

describe("Tiltfile", () => {
  it("every image it builds appears where Tilt rewrites it in the chart it installs", async () => {
    const res = await helmTemplate(home, "capstan", "capstan-system", tiltSetValues());
    expect(res.stderr).toBe("");
    expect(res.code).toBe(0);
    const containers = parseRendered(res.stdout)
      .filter(
        (o): o is Rendered & { spec: { template: { spec: { containers: unknown[] } } } } => o.kind === "Deployment",
      )
      .flatMap((d) => d.spec.template.spec.containers as { image: string; env?: { name: string; value?: string }[] }[]);
    const images = new Set(containers.map((c) => repo(c.image)));
    const envValues = new Set(containers.flatMap((c) => (c.env ?? []).map((e) => repo(e.value ?? ""))));
    const builds = tiltBuilds();
    expect(builds.map((b) => b.image).sort()).toEqual(
      ["operator", "console", "gateway", "search", "scraper"].map((t) => `ghcr.io/capstan-dev/${t}`).sort(),
    );
    for (const b of builds) {
      if (b.inEnv) expect(envValues, `${b.image} as an env value`).toContain(b.image);
      else expect(images, `${b.image} as a container image`).toContain(b.image);
    }
  });
});
