// The node's container runtime: containerd v2 (CRI plugin, Debian's runc, the CNI plugins) on a
// socket in the run's directory, and `ctr` for what the CRI does not do (importing archives).
// Its image store (content and snapshots) persists in the cache between runs: importing the
// platform's archives (about 3 GB) takes minutes, and an archive already imported is skipped.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import type { NodeBinaries } from "./node-binaries.ts";
import { cniConfList, containerdConfig } from "./node-config.ts";
import { type ManagedProcess, startProcess, waitFor } from "./process.ts";

const exec = promisify(execFile);
/** The namespace the CRI plugin (and so the kubelet) sees images and containers in. */
const criNamespace = "k8s.io";

export interface Runtime {
  socket: string;
  /** containerd's config_path: one <host>/hosts.toml per registry it pulls from. */
  registryHostsDir: string;
  proc: ManagedProcess;
  ctr(args: string[], timeoutMs?: number): Promise<string>;
  importImage(archivePath: string): Promise<void>;
  listImages(): Promise<string[]>;
  /** Kills and deletes every container left in the CRI namespace (after the kubelet stopped). */
  removeAllContainers(): Promise<void>;
}

/** `imageRoot`: containerd's root (kept between runs); everything else lives in `dir`. */
export async function startRuntime(bin: NodeBinaries, dir: string, imageRoot: string): Promise<Runtime> {
  const base = join(dir, "containerd");
  const imported = join(imageRoot, "capstan-imported");
  mkdirSync(imported, { recursive: true });
  const cniConfDir = join(dir, "cni", "net.d");
  mkdirSync(base, { recursive: true });
  mkdirSync(cniConfDir, { recursive: true });
  writeFileSync(join(cniConfDir, "10-capstan.conflist"), cniConfList(join(dir, "cni", "ipam")));
  const socket = join(base, "containerd.sock");
  const registryHostsDir = join(base, "certs.d");
  mkdirSync(registryHostsDir, { recursive: true });
  const config = join(base, "config.toml");
  writeFileSync(
    config,
    containerdConfig({
      root: imageRoot,
      state: join(base, "state"),
      socket,
      pauseImage: bin.pauseImage,
      cniConfDir,
      registryHostsDir,
    }),
  );
  // The shim is found on PATH; runc and the CNI plugins by absolute path (see the config).
  const env = { ...process.env, PATH: `${bin.shimDir}:/usr/sbin:/usr/bin:/sbin:/bin` };
  const proc = startProcess("containerd", bin.containerd, ["--config", config], env, { detached: true });

  const ctr = async (args: string[], timeoutMs = 60_000) =>
    (
      await exec(bin.ctr, ["--address", socket, "--namespace", criNamespace, ...args], {
        timeout: timeoutMs,
        maxBuffer: 16 * 1024 * 1024,
      })
    ).stdout;
  await waitFor("containerd", async () => (await ctr(["version"], 5_000)).includes("Server:"), {
    timeoutMs: 30_000,
    proc,
  });

  const listImages = async () =>
    (await ctr(["images", "list", "--quiet"]))
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("sha256:"));
  const removeAllContainers = async () => {
    const ids = (await ctr(["containers", "list", "--quiet"])).split("\n").filter(Boolean);
    for (const id of ids) {
      await ctr(["tasks", "kill", "--signal", "SIGKILL", id], 10_000).catch(() => undefined);
      await ctr(["tasks", "delete", "--force", id], 10_000).catch(() => undefined);
      await ctr(["containers", "delete", id], 10_000).catch(() => undefined);
    }
  };
  // Containers recorded by a run that died are gone with their state directory: drop them.
  await removeAllContainers();
  return {
    socket,
    registryHostsDir,
    proc,
    ctr,
    // Unpacked into the overlayfs snapshotter the CRI plugin uses, so pods start without a pull.
    // A marker per archive (path, size, mtime) says it is already in the persistent store.
    importImage: async (archivePath) => {
      const st = statSync(archivePath);
      const key = createHash("sha256")
        .update(`${resolve(archivePath)}\0${st.size}\0${st.mtimeMs}`)
        .digest("hex");
      if (existsSync(join(imported, key))) return;
      await ctr(["images", "import", "--snapshotter", "overlayfs", archivePath], 600_000);
      writeFileSync(join(imported, key), `${resolve(archivePath)}\n`);
    },
    listImages,
    removeAllContainers,
  };
}
