// Global setup of the e2e project: one real single-node cluster (test/ground/node.ts) per run,
// Capstan's images of this tree and its chart published to the node's registry
// (support/release.ts: the tests install from there), always torn down.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { helmBinary } from "../ground/helm.ts";
import { type Cluster, nodeBinariesPresent, startCluster } from "../ground/node.ts";
import { nodeBinaries } from "../ground/node-binaries.ts";
import { monitoringBuild } from "./support/monitoring-build.ts";
import { publishRelease, type Release } from "./support/publish.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** Admin kubeconfig of the e2e cluster. */
    e2eKubeconfig: string;
    e2eServer: string;
    /** Traefik's base URLs on loopback. */
    e2eIngressHttps: string;
    e2eIngressHttp: string;
  }
}

let cluster: Cluster | undefined;
let releaseDir: string | undefined;

/**
 * The images of this tree: scripts/images/build.sh tags them by a hash of their inputs, so an
 * unchanged tree builds nothing (under a second) and a changed one rebuilds what changed.
 */
function buildImages(): void {
  if (process.env.CAPSTAN_E2E_IMAGES) return;
  const started = Date.now();
  execFileSync("bash", ["scripts/images/build.sh"], { stdio: ["ignore", "inherit", "inherit"] });
  console.log(`[e2e] images of this tree ready in ${Date.now() - started} ms`);
}

export async function setup(project: TestProject): Promise<void> {
  const missing = nodeBinariesPresent();
  if (missing) throw new Error(`[e2e] cannot start the cluster: ${missing}`);
  buildImages();
  const started = Date.now();
  cluster = await startCluster();
  const up = Date.now() - started;
  // The node's own smoke test (cluster.test.ts) runs a static busybox built with the binaries.
  await cluster.importImage(nodeBinaries().busyboxArchive);
  // Capstan's images and chart go through the node's registry, as on a cluster: nothing of
  // Capstan is imported into the runtime, the kubelet pulls each image by digest.
  const publishStart = Date.now();
  releaseDir = mkdtempSync(join(tmpdir(), "capstan-e2e-release-"));
  let release: Release;
  try {
    release = publishRelease({
      registry: cluster.registry,
      dir: releaseDir,
      crane: nodeBinaries().crane,
      helm: helmBinary(),
    });
  } catch (err) {
    await teardown();
    cluster = undefined;
    releaseDir = undefined;
    throw err;
  }
  console.log(`[e2e] images and chart published to ${cluster.registry.host} in ${Date.now() - publishStart} ms`);
  // The Prometheus pod's images (test/e2e/monitoring.test.ts), kept like the others.
  const monitoring = monitoringBuild();
  if (typeof monitoring === "string") console.log(`[e2e] no monitoring images: ${monitoring}`);
  else {
    const importStart = Date.now();
    for (const archive of [monitoring.prometheusArchive, monitoring.configReloaderArchive]) {
      await cluster.importImage(archive);
    }
    console.log(`[e2e] Prometheus and config-reloader images in place in ${Date.now() - importStart} ms`);
  }
  project.provide("e2eKubeconfig", cluster.kubeconfig);
  project.provide("e2eServer", cluster.server);
  project.provide("e2eIngressHttps", cluster.ingress.https);
  project.provide("e2eIngressHttp", cluster.ingress.http);
  project.provide("e2eRelease", release);
  console.log(`[e2e] cluster ${cluster.server} node ${cluster.nodeName} up in ${up} ms`);
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
  if (releaseDir) rmSync(releaseDir, { recursive: true, force: true });
}
