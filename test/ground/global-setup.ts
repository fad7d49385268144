// Global setup of the integration project: one real Redis and one real etcd + kube-apiserver per
// test run, shared by every test file through vitest's provide/inject, always torn down.
import type { TestProject } from "vitest/node";
import { type KubeControlPlane, kubeBinDir, startKube } from "./kube.ts";
import { type QdrantServer, startQdrant } from "./qdrant.ts";
import { type RedisServer, startRedis } from "./redis.ts";

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
    /** Path of an admin kubeconfig for the test API server; "" when the binaries are not built. */
    kubeconfig: string;
    kubeServer: string;
    /** A real Qdrant server (vendored binary) for this run, no API key. */
    qdrantUrl: string;
  }
}

let redis: RedisServer | undefined;
let kube: KubeControlPlane | undefined;
let qdrant: QdrantServer | undefined;

export async function setup(project: TestProject): Promise<void> {
  const started = Date.now();
  const haveKube = kubeBinDir() !== undefined;
  if (!haveKube) {
    console.warn(
      "[test ground] etcd/kube-apiserver are not built: tests that need the API server will fail. " +
        "Run `bash test/scripts/build-kube-binaries.sh`.",
    );
  }
  const [r, k, q] = await Promise.all([
    startRedis(),
    haveKube ? startKube() : Promise.resolve(undefined),
    startQdrant(),
  ]);
  redis = r;
  kube = k;
  qdrant = q;
  project.provide("redisUrl", redis.url);
  project.provide("kubeconfig", kube?.kubeconfig ?? "");
  project.provide("kubeServer", kube?.server ?? "");
  project.provide("qdrantUrl", qdrant.url);
  console.log(
    `[test ground] redis ${redis.url}, qdrant ${qdrant.url}${kube ? `, kube-apiserver ${kube.server}` : ""} up in ${Date.now() - started} ms`,
  );
}

export async function teardown(): Promise<void> {
  await Promise.allSettled([redis?.stop(), kube?.stop(), qdrant?.stop()]);
}
