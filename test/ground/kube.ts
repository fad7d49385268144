// A real control plane for tests, as envtest builds it: etcd and kube-apiserver (built from the
// Go module proxy by test/scripts/build-kube-binaries.sh) on free loopback ports, generated
// certificates, an admin client certificate (system:masters), a service-account signing key,
// RBAC authorization and the ServiceAccount admission plugin disabled. Writes a kubeconfig.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, fetch } from "undici";
import { freePort } from "./ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "./process.ts";

export interface KubeControlPlane {
  server: string;
  kubeconfig: string;
  dir: string;
  /** Stops kube-apiserver only (etcd keeps the data) and starts it again on the same port. */
  restartApiServer(): Promise<void>;
  stop(): Promise<void>;
}

/** Where build-kube-binaries.sh caches what it builds (outside the repository). */
export function binaryCacheDir(): string {
  return process.env.CAPSTAN_CACHE ?? join(homedir(), ".cache", "capstan");
}

/** Where build-kube-binaries.sh put etcd and kube-apiserver, or undefined when not built. */
export function kubeBinDir(): string | undefined {
  if (process.env.KUBE_BIN_DIR) return process.env.KUBE_BIN_DIR;
  const pointer = join(binaryCacheDir(), "kube", "current");
  if (!existsSync(pointer)) return undefined;
  const dir = readFileSync(pointer, "utf8").trim();
  return existsSync(join(dir, "kube-apiserver")) && existsSync(join(dir, "etcd")) ? dir : undefined;
}

function openssl(args: string[], cwd: string): void {
  execFileSync("openssl", args, { cwd, stdio: "pipe" });
}

/** Signs `<name>.crt`/`<name>.key` in dir with the CA there (subject and extensions as openssl takes them). */
export function signCert(dir: string, name: string, subj: string, ext: string): void {
  openssl(
    ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", subj],
    dir,
  );
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(
    [
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      `${name}.crt`,
      "-days",
      "2",
      "-extfile",
      `${name}.ext`,
    ],
    dir,
  );
}

/** CA, apiserver serving cert (127.0.0.1, localhost + extra SANs), admin client cert, service-account key pair. */
function generateCerts(dir: string, extraSans: string[]): void {
  const days = ["-days", "2"];
  openssl(
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      "ca.key",
      "-out",
      "ca.crt",
      ...days,
      "-subj",
      "/CN=capstan-test-ca",
    ],
    dir,
  );
  const sans = ["IP:127.0.0.1", "DNS:localhost", ...extraSans].join(",");
  signCert(dir, "apiserver", "/CN=kube-apiserver", `subjectAltName=${sans}\nextendedKeyUsage=serverAuth\n`);
  signCert(dir, "admin", "/CN=capstan-admin/O=system:masters", "extendedKeyUsage=clientAuth\n");
  openssl(["genrsa", "-out", "sa.key", "2048"], dir);
  openssl(["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"], dir);
}

function kubeconfigYaml(server: string, dir: string): string {
  const b64 = (f: string) => readFileSync(join(dir, f)).toString("base64");
  return `apiVersion: v1
kind: Config
clusters:
- name: capstan-test
  cluster:
    server: ${server}
    certificate-authority-data: ${b64("ca.crt")}
users:
- name: capstan-admin
  user:
    client-certificate-data: ${b64("admin.crt")}
    client-key-data: ${b64("admin.key")}
contexts:
- name: capstan-test
  context: {cluster: capstan-test, user: capstan-admin, namespace: default}
current-context: capstan-test
`;
}

/** Options for a control plane that a real node joins (test/ground/node.ts); the defaults are the integration tests'. */
export interface KubeOptions {
  /** Address kube-apiserver binds and advertises (default 127.0.0.1); a node's pods must reach it. */
  address?: string;
  /** Extra subjectAltName entries of the serving certificate, e.g. "IP:198.19.0.1". */
  extraSans?: string[];
  serviceCidr?: string;
  /**
   * A full cluster: the ServiceAccount admission plugin on (pods get a token), the Node authorizer
   * and NodeRestriction. Off by default: the integration tests create pods no controller serves.
   */
  cluster?: boolean;
  /**
   * Runs before kube-apiserver starts, with the certificate directory (to sign more certificates
   * with the CA there); returns extra kube-apiserver flags.
   */
  prepare?: (dir: string) => string[];
  /** Start etcd and kube-apiserver in their own session (see startProcess). */
  detached?: boolean;
}

export async function startKube(opts: KubeOptions = {}): Promise<KubeControlPlane> {
  const bin = kubeBinDir();
  if (!bin)
    throw new Error(
      "etcd/kube-apiserver not built: run `bash test/scripts/build-kube-binaries.sh` (or `bash .ci/run`)",
    );
  const dir = mkdtempSync(join(tmpdir(), "capstan-kube-"));
  generateCerts(dir, opts.extraSans ?? []);
  const extraArgs = opts.prepare?.(dir) ?? [];
  const address = opts.address ?? "127.0.0.1";
  const detached = { detached: opts.detached ?? false };
  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];

  const etcd = startProcess(
    "etcd",
    join(bin, "etcd"),
    [
      `--data-dir=${join(dir, "etcd")}`,
      `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
      "--unsafe-no-fsync",
      "--log-level=warn",
    ],
    undefined,
    detached,
  );
  await waitFor(
    "etcd /health",
    async () => (await fetch(`http://127.0.0.1:${etcdPort}/health`, { signal: AbortSignal.timeout(2000) })).ok,
    { timeoutMs: 30_000, proc: etcd },
  );

  const server = `https://${address}:${apiPort}`;
  const apiArgs = [
    `--etcd-servers=http://127.0.0.1:${etcdPort}`,
    `--bind-address=${address}`,
    `--advertise-address=${address}`,
    `--secure-port=${apiPort}`,
    `--cert-dir=${dir}`,
    `--tls-cert-file=${join(dir, "apiserver.crt")}`,
    `--tls-private-key-file=${join(dir, "apiserver.key")}`,
    `--client-ca-file=${join(dir, "ca.crt")}`,
    `--service-account-key-file=${join(dir, "sa.pub")}`,
    `--service-account-signing-key-file=${join(dir, "sa.key")}`,
    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
    `--service-cluster-ip-range=${opts.serviceCidr ?? "10.0.0.0/24"}`,
    ...(opts.cluster
      ? ["--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction"]
      : ["--authorization-mode=RBAC", "--disable-admission-plugins=ServiceAccount"]),
    "--allow-privileged=true",
    "--enable-priority-and-fairness=false",
    "--v=0",
    ...extraArgs,
  ];
  const tls = new Agent({
    connect: {
      ca: readFileSync(join(dir, "ca.crt")),
      cert: readFileSync(join(dir, "admin.crt")),
      key: readFileSync(join(dir, "admin.key")),
    },
  });
  let api: ManagedProcess;
  const startApi = async () => {
    api = startProcess("kube-apiserver", join(bin, "kube-apiserver"), apiArgs, undefined, detached);
    await waitFor(
      "kube-apiserver /readyz",
      async () =>
        (await fetch(`${server}/readyz`, { dispatcher: tls, signal: AbortSignal.timeout(5000) })).status === 200,
      { timeoutMs: 90_000, proc: api },
    );
  };
  try {
    await startApi();
  } catch (err) {
    await etcd.stop();
    throw err;
  }

  const kubeconfig = join(dir, "kubeconfig");
  writeFileSync(kubeconfig, kubeconfigYaml(server, dir), { mode: 0o600 });
  return {
    server,
    kubeconfig,
    dir,
    restartApiServer: async () => {
      await api.stop();
      await startApi();
    },
    stop: async () => {
      await api?.stop();
      await etcd.stop();
      await tls.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
