// Dynamic storage on the one-node cluster, as k3s and kind provide it: rancher's
// local-path-provisioner (built by test/scripts/build-node-binaries.sh) and a default StorageClass
// `local-path`, so a PersistentVolumeClaim with no class gets a directory on the node's disk, the
// way a claim on a real cluster gets a volume from its default class. No test pre-creates volumes.
//
// The provisioner runs as a host process with the admin kubeconfig (like kube-proxy here; upstream
// runs it as a Deployment with the same rights). For each claim it starts a short-lived helper pod
// (the busybox image) that makes the directory (mode 0777, so images running as any user can
// write to it), and another that removes it when the claim is deleted. Its configuration is
// upstream's manifest, with the node's folder under the cluster's directory (removed at teardown).
import { join } from "node:path";
import { KubeApiError } from "@capstan/shared/kube";
import type { NodeBinaries } from "./node-binaries.ts";
import { type ManagedProcess, startProcess, waitFor } from "./process.ts";
import type { TestKube } from "./test-kube.ts";

export const storageClass = "local-path";
const namespace = "local-path-storage";
const serviceAccount = "local-path-provisioner-service-account";
const configMap = "local-path-config";

/** Creates obj at path; one that exists already (a restarted run) is kept. */
async function create(client: TestKube, path: string, obj: object): Promise<void> {
  try {
    await client.json(path, { method: "POST", body: obj });
  } catch (err) {
    if (!(err instanceof KubeApiError) || err.status !== 409) throw err;
  }
}

function helperPod(image: string): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "helper-pod" },
    spec: {
      priorityClassName: "system-node-critical",
      tolerations: [{ key: "node.kubernetes.io/disk-pressure", operator: "Exists", effect: "NoSchedule" }],
      containers: [{ name: "helper-pod", image, imagePullPolicy: "IfNotPresent" }],
    },
  });
}

/**
 * The provisioner's namespace, ServiceAccount (its helper pods run as it), configuration and the
 * default StorageClass; then the provisioner, returned once it runs.
 */
export async function startLocalStorage(o: {
  bin: NodeBinaries;
  client: TestKube;
  kubeconfig: string;
  /** The cluster's directory: volumes go to <dir>/local-path. */
  dir: string;
}): Promise<ManagedProcess> {
  const { client } = o;
  await create(client, "/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
  await create(client, `/api/v1/namespaces/${namespace}/serviceaccounts`, {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: serviceAccount, namespace },
  });
  await create(client, `/api/v1/namespaces/${namespace}/configmaps`, {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: configMap, namespace },
    data: {
      "config.json": JSON.stringify({
        nodePathMap: [{ node: "DEFAULT_PATH_FOR_NON_LISTED_NODES", paths: [join(o.dir, "local-path")] }],
      }),
      setup: '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n',
      teardown: '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n',
      "helperPod.yaml": helperPod(o.bin.busyboxImage),
    },
  });
  await create(client, "/apis/storage.k8s.io/v1/storageclasses", {
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: { name: storageClass, annotations: { "storageclass.kubernetes.io/is-default-class": "true" } },
    provisioner: "rancher.io/local-path",
    // The claim binds when its pod is scheduled, on that pod's node (upstream's setting).
    volumeBindingMode: "WaitForFirstConsumer",
    reclaimPolicy: "Delete",
  });
  const proc = startProcess(
    "local-path-provisioner",
    o.bin.localPathProvisioner,
    [
      "start",
      `--kubeconfig=${o.kubeconfig}`,
      `--namespace=${namespace}`,
      `--configmap-name=${configMap}`,
      `--service-account-name=${serviceAccount}`,
      `--helper-image=${o.bin.busyboxImage}`,
      "--provisioner-name=rancher.io/local-path",
    ],
    undefined,
    { detached: true },
  );
  await waitFor("local-path-provisioner started", async () => proc.output().includes("Starting provisioner"), {
    timeoutMs: 60_000,
    proc,
  });
  return proc;
}
