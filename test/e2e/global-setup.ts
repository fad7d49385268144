// Global setup of the e2e project: one real single-node cluster (test/ground/node.ts) per run,
// the images of the last image build imported into its runtime, always torn down.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { binaryCacheDir } from "../ground/kube.ts";
import { type Cluster, nodeBinariesPresent, startCluster } from "../ground/node.ts";
import { nodeBinaries } from "../ground/node-binaries.ts";
import { monitoringBuild } from "./support/monitoring-build.ts";

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

/** CAPSTAN_E2E_IMAGES, else the directory the image build recorded in <cache>/images/current. */
function imagesDir(): string | undefined {
  if (process.env.CAPSTAN_E2E_IMAGES) return process.env.CAPSTAN_E2E_IMAGES;
  const pointer = join(binaryCacheDir(), "images", "current");
  return existsSync(pointer) ? readFileSync(pointer, "utf8").trim() : undefined;
}

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
  const dir = imagesDir();
  if (dir && existsSync(dir)) {
    const archives = readdirSync(dir).filter((f) => f.endsWith(".tar"));
    const importStart = Date.now();
    // Archives imported by an earlier run are skipped (the image store persists in the cache).
    for (const archive of archives) await cluster.importImage(join(dir, archive));
    console.log(`[e2e] ${archives.length} image archive(s) from ${dir} in place in ${Date.now() - importStart} ms`);
  } else {
    console.log(
      `[e2e] no image directory (${dir ?? "CAPSTAN_E2E_IMAGES unset and no images/current pointer"}): importing none`,
    );
  }
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
  console.log(`[e2e] cluster ${cluster.server} node ${cluster.nodeName} up in ${up} ms`);
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
}
