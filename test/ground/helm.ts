// Helm, built from the Go module proxy by test/scripts/build-kube-binaries.sh (version pinned in
// test/kube-bin/helm/go.mod), run on charts/capstan against the test API server.
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { binaryCacheDir } from "./kube.ts";

const goMod = fileURLToPath(new URL("../kube-bin/helm/go.mod", import.meta.url));

/** The helm binary of the pinned version; throws with the command that builds it when missing. */
export function helmBinary(): string {
  if (process.env.HELM_BIN) return process.env.HELM_BIN;
  const version = /^require helm\.sh\/helm\/v3 (\S+)/m.exec(readFileSync(goMod, "utf8"))?.[1];
  const bin = join(binaryCacheDir(), "helm", version ?? "unknown", "helm");
  if (!existsSync(bin))
    throw new Error(`helm ${version} is not built: run \`bash test/scripts/build-kube-binaries.sh\``);
  return bin;
}

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs helm with its state (cache, config, data) in `home`, never the user's. Bounded in time. */
export function helm(args: string[], home: string, timeoutMs = 60_000): Promise<HelmResult> {
  return new Promise((resolve) => {
    execFile(
      helmBinary(),
      args,
      {
        timeout: timeoutMs,
        maxBuffer: 32 * 1024 * 1024,
        env: {
          PATH: process.env.PATH ?? "",
          HOME: home,
          HELM_CACHE_HOME: join(home, "cache"),
          HELM_CONFIG_HOME: join(home, "config"),
          HELM_DATA_HOME: join(home, "data"),
        },
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
