// The previous released version of Capstan ("N-1"), published to the e2e node's registry beside
// this tree's release, so test/e2e/upgrade.test.ts can install it and upgrade to this tree.
//
// Its images and chart are built from the commit the last release landed, once per machine
// (previous-release.sh: a temporary git worktree of that commit runs its own
// scripts/images/build.sh; the result stays in ~/.cache/capstan/previous-release/<sha>), then its
// own scripts/release.sh publishes them.
//
// Moving the pin at each release: once release X.Y.Z is tagged, set PREVIOUS_RELEASE.sha to the
// commit it was released from and .version to X.Y.Z (that commit's charts/capstan/Chart.yaml
// version), and bump charts/capstan/Chart.yaml on main past it, so the registry holds both.
import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { helmBinary } from "../../ground/helm.ts";
import { nodeBinaries } from "../../ground/node-binaries.ts";
import type { RegistryAccess } from "../../ground/node-registry.ts";
import { publishRelease, type Release } from "./publish.ts";

/**
 * The last release: the commit it was built from and its chart's version. `gap` names what keeps
 * an upgrade from it from being free of failed requests, when something does: upgrade.test.ts
 * then skips, saying so, unless CAPSTAN_E2E_UPGRADE=1 asks to run it anyway.
 */
export const PREVIOUS_RELEASE: { sha: string; version: string; gap?: string } = {
  sha: "2a9fb9dbcf867ff7cf743647ad006ba9d6e98449",
  version: "0.2.0",
};

const script = fileURLToPath(new URL("./previous-release.sh", import.meta.url));

/**
 * The previous release's image build (a folder of archives and tags.env), built on the first call
 * on this machine (minutes: the layers this tree's builds share are reused) and found afterwards.
 */
export function previousImages(): string {
  const started = Date.now();
  const out = execFileSync("bash", [script, PREVIOUS_RELEASE.sha], {
    stdio: ["ignore", "pipe", "inherit"],
    timeout: 3_600_000,
  })
    .toString()
    .trim()
    .split("\n")
    .pop() as string;
  console.log(`[e2e] previous release ${PREVIOUS_RELEASE.version} images ready in ${Date.now() - started} ms: ${out}`);
  return out;
}

/** Builds (once) and publishes the previous release to `registry` (credentials kept in `dir`). */
export function publishPrevious(registry: RegistryAccess, dir: string): Release {
  const imagesDir = previousImages();
  const started = Date.now();
  const published = publishRelease({
    registry,
    dir,
    crane: nodeBinaries().crane,
    helm: helmBinary(),
    source: { root: join(dirname(imagesDir), "..", "src"), imagesDir },
  });
  if (published.chartVersion !== PREVIOUS_RELEASE.version)
    throw new Error(`the previous release's chart is ${published.chartVersion}, not ${PREVIOUS_RELEASE.version}`);
  console.log(`[e2e] previous release published in ${Date.now() - started} ms: ${published.chart}`);
  return published;
}
