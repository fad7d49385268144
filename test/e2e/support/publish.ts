// Capstan released to the e2e node's registry (test/ground/node-registry.ts) the way a platform
// team publishes it: scripts/release.sh pushes the images with crane and the chart with helm.
// Runs in the e2e global setup, so it imports nothing of vitest's runtime (release.ts is the
// tests' side).
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { binaryCacheDir } from "../../ground/kube.ts";
import type { RegistryAccess } from "../../ground/node-registry.ts";

export interface Release {
  registry: RegistryAccess;
  /** helm's registry credentials (helm registry login), for installs from oci://. */
  registryConfig: string;
  /** The release's values file: every image as repository + digest. */
  imagesValues: string;
  /** Image references by name (operator, gateway, ..., redis, qdrant): repository@sha256:…. */
  images: Record<string, string>;
  chart: string;
  chartVersion: string;
}

const root = fileURLToPath(new URL("../../..", import.meta.url));

/**
 * Logs crane and helm in to the registry (credentials kept in `dir`, never the user's home) and
 * runs scripts/release.sh against it; returns what it published. `source` publishes another
 * checkout's chart (its scripts/release.sh and charts/capstan) with the image build in `imagesDir`
 * (support/previous-release.ts); by default this tree's, with its last image build.
 */
export function publishRelease(o: {
  registry: RegistryAccess;
  dir: string;
  crane: string;
  helm: string;
  source?: { root: string; imagesDir: string };
}): Release {
  const { registry, dir } = o;
  const imagesDir = o.source?.imagesDir ?? process.env.CAPSTAN_E2E_IMAGES;
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: dir,
    DOCKER_CONFIG: join(dir, "docker"),
    HELM_CACHE_HOME: join(dir, "helm", "cache"),
    HELM_CONFIG_HOME: join(dir, "helm", "config"),
    HELM_DATA_HOME: join(dir, "helm", "data"),
    HELM_REGISTRY_CONFIG: join(dir, "helm", "registry.json"),
    CAPSTAN_CACHE: binaryCacheDir(),
    ...(imagesDir ? { IMAGES_DIR: imagesDir } : {}),
  };
  mkdirSync(env.DOCKER_CONFIG, { recursive: true });
  const run = (cmd: string, args: string[], input?: string) =>
    execFileSync(cmd, args, { env, input, cwd: root, stdio: ["pipe", "pipe", "inherit"], timeout: 600_000 }).toString();
  run(o.crane, ["auth", "login", registry.host, "-u", registry.username, "--password-stdin"], registry.password);
  run(
    o.helm,
    ["registry", "login", registry.host, "--username", registry.username, "--password-stdin"].concat([
      "--ca-file",
      registry.caFile,
    ]),
    registry.password,
  );
  const out = join(dir, "release");
  execFileSync("bash", ["scripts/release.sh", registry.host, out], {
    cwd: o.source?.root ?? root,
    env: { ...env, CRANE: o.crane, HELM: o.helm, REGISTRY_CA: registry.caFile },
    stdio: ["ignore", "inherit", "inherit"],
    timeout: 600_000,
  });
  const vars = new Map(
    readFileSync(join(out, "release.env"), "utf8")
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)] as const),
  );
  const images: Record<string, string> = {};
  for (const [key, value] of vars) if (key.endsWith("_IMAGE")) images[key.slice(0, -6).toLowerCase()] = value;
  return {
    registry,
    registryConfig: env.HELM_REGISTRY_CONFIG,
    imagesValues: join(out, "images.yaml"),
    images,
    chart: vars.get("CHART") as string,
    chartVersion: vars.get("CHART_VERSION") as string,
  };
}
