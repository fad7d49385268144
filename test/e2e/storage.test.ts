// Dynamic storage on the e2e node, as a cluster with a default StorageClass provides it
// (test/ground/node-storage.ts): a claim that names no class is bound by rancher's
// local-path-provisioner to a directory on the node when its pod is scheduled, a pod running as
// the images' non-root user can write to it, and deleting the claim removes the volume and the
// directory. The chart's claims (search's embedded store, the dev Qdrant) rely on exactly this.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { KubeApiError } from "@capstan/shared/kube";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { kubeHttpFrom, type TestKube } from "../ground/kube-client.ts";
import { nodeBinaries } from "../ground/node-binaries.ts";
import { eventually } from "./support/kube.ts";
import { createNamespace, deleteNamespace } from "./support/pods.ts";

const ns = `storage-${process.pid}`;
let kube: TestKube;

interface Claim {
  spec: { volumeName?: string; storageClassName?: string };
  status: { phase: string };
}

beforeAll(async () => {
  kube = kubeHttpFrom(inject("e2eKubeconfig"));
  await createNamespace(kube, ns);
});

afterAll(async () => {
  if (kube) await deleteNamespace(kube, ns);
});

describe("dynamic storage on the node (local-path-provisioner)", () => {
  it("has one default StorageClass, local-path", async () => {
    const classes = await kube.json<{ items: { metadata: { name: string; annotations?: Record<string, string> } }[] }>(
      "/apis/storage.k8s.io/v1/storageclasses",
    );
    const defaults = classes.items.filter(
      (c) => c.metadata.annotations?.["storageclass.kubernetes.io/is-default-class"] === "true",
    );
    expect(defaults.map((c) => c.metadata.name)).toEqual(["local-path"]);
  });

  it("binds a claim with no class for a non-root pod, and removes the volume and its folder with the claim", async () => {
    await kube.json(`/api/v1/namespaces/${ns}/persistentvolumeclaims`, {
      method: "POST",
      body: {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name: "data" },
        spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "64Mi" } } },
      },
    });
    await kube.json(`/api/v1/namespaces/${ns}/pods`, {
      method: "POST",
      body: {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "writer" },
        spec: {
          restartPolicy: "Never",
          terminationGracePeriodSeconds: 0,
          // The user Capstan's images run as.
          securityContext: { runAsUser: 10001, runAsGroup: 10001 },
          volumes: [{ name: "data", persistentVolumeClaim: { claimName: "data" } }],
          containers: [
            {
              name: "main",
              image: nodeBinaries().busyboxImage,
              imagePullPolicy: "Never",
              command: ["/bin/sh", "-c", "echo kept > /data/file"],
              volumeMounts: [{ name: "data", mountPath: "/data" }],
            },
          ],
        },
      },
    });
    const phase = await eventually(
      "the writer pod to finish",
      async () => {
        const p = (await kube.json<{ status?: { phase?: string } }>(`/api/v1/namespaces/${ns}/pods/writer`)).status
          ?.phase;
        return p === "Succeeded" || p === "Failed" ? p : undefined;
      },
      120_000,
      500,
    );
    expect(phase).toBe("Succeeded");
    const claim = await kube.json<Claim>(`/api/v1/namespaces/${ns}/persistentvolumeclaims/data`);
    expect(claim.status.phase).toBe("Bound");
    expect(claim.spec.storageClassName).toBe("local-path");
    const volume = await kube.json<{ spec: { hostPath?: { path: string } } }>(
      `/api/v1/persistentvolumes/${claim.spec.volumeName}`,
    );
    const dir = volume.spec.hostPath?.path as string;
    expect(readFileSync(join(dir, "file"), "utf8")).toBe("kept\n");

    await kube.json(`/api/v1/namespaces/${ns}/pods/writer`, { method: "DELETE" });
    await kube.json(`/api/v1/namespaces/${ns}/persistentvolumeclaims/data`, { method: "DELETE" });
    await eventually(
      "the volume and its folder removed",
      async () => {
        try {
          await kube.json(`/api/v1/persistentvolumes/${claim.spec.volumeName}`);
          return undefined;
        } catch (err) {
          if (!(err instanceof KubeApiError) || err.status !== 404) throw err;
          return existsSync(dir) ? undefined : true;
        }
      },
      120_000,
      500,
    );
  });
});
