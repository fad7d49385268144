// Where scripts/setup.d/62-prometheus-operator.sh put the Prometheus Operator and the two images
// its Prometheus pod runs: <cache>/prometheus-operator/current, one KEY=path line each. Read by the
// e2e global setup (to import the images into the node) and by monitoring-stack.ts.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { binaryCacheDir } from "../../ground/kube.ts";

export interface MonitoringBuild {
  operatorVersion: string;
  /** The operator binary, run on the host with the cluster's admin kubeconfig. */
  operator: string;
  /** The module's CRD manifests (monitoring.coreos.com), one file per kind. */
  crds: string;
  configReloaderImage: string;
  configReloaderArchive: string;
  /** The version the Prometheus resource declares (the operator writes flags and config for it). */
  prometheusVersion: string;
  prometheusImage: string;
  prometheusArchive: string;
}

const keys: Record<keyof MonitoringBuild, string> = {
  operatorVersion: "OPERATOR_VERSION",
  operator: "OPERATOR",
  crds: "CRDS",
  configReloaderImage: "CONFIG_RELOADER_IMAGE",
  configReloaderArchive: "CONFIG_RELOADER_ARCHIVE",
  prometheusVersion: "PROMETHEUS_VERSION",
  prometheusImage: "PROMETHEUS_IMAGE",
  prometheusArchive: "PROMETHEUS_ARCHIVE",
};
const PATHS: (keyof MonitoringBuild)[] = ["operator", "crds", "configReloaderArchive", "prometheusArchive"];
const BUILD = "run `bash scripts/setup.d/62-prometheus-operator.sh` (or `bash scripts/setup.sh`)";

/** The build, or why there is none (a sentence naming the command that makes it). */
export function monitoringBuild(): MonitoringBuild | string {
  const pointer = join(binaryCacheDir(), "prometheus-operator", "current");
  if (!existsSync(pointer)) return `the Prometheus Operator is not built (no ${pointer}): ${BUILD}`;
  const vars = new Map(
    readFileSync(pointer, "utf8")
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1).trim()] as const),
  );
  const out: Partial<MonitoringBuild> = {};
  for (const [field, key] of Object.entries(keys) as [keyof MonitoringBuild, string][]) {
    const value = vars.get(key);
    if (!value) return `${pointer} has no ${key}: ${BUILD}`;
    if (PATHS.includes(field) && !existsSync(value)) return `${key} ${value} is missing: ${BUILD}`;
    out[field] = value;
  }
  return out as MonitoringBuild;
}
