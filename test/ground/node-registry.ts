// The node's OCI registry, as a platform team runs its in-house one: the CNCF distribution server
// (built by test/scripts/build-node-binaries.sh) on the node's address, port 5000, over TLS with a
// certificate from the cluster's CA and basic authentication (an htpasswd file). The e2e setup
// pushes Capstan's images (crane) and chart (helm push) to it; the kubelet pulls the images by
// digest through containerd with a pull Secret, and helm installs the chart from oci://.
//
// TLS rather than a plain-HTTP mirror: the registry takes a password, which must not cross the
// network in the clear, and containerd, helm and crane all verify a private CA when told where it
// is (containerd through hosts.toml, the standard per-registry configuration; helm with
// --ca-file; crane through SSL_CERT_FILE). The blobs live in the run's directory, removed at
// teardown.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Agent, fetch } from "undici";
import { signCert } from "./kube.ts";
import type { NodeBinaries } from "./node-binaries.ts";
import { net } from "./node-config.ts";
import { type ManagedProcess, startProcess, waitFor } from "./process.ts";

/** What a client needs to push to and pull from the registry. */
export interface RegistryAccess {
  /** host:port, as image references and containerd's hosts directory name it. */
  host: string;
  /** The CA that signed the registry's certificate (the cluster's CA). */
  caFile: string;
  username: string;
  password: string;
}

export interface Registry extends RegistryAccess {
  proc: ManagedProcess;
}

const port = 5000;
const username = "capstan";
const bcryptAlphabet = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/**
 * An htpasswd line (bcrypt, the only scheme the registry accepts) made by the C library's crypt(3)
 * through perl: Debian's libcrypt (libxcrypt) implements $2b$, and Node has no bcrypt of its own.
 */
function htpasswdLine(user: string, password: string): string {
  const salt = [...randomBytes(22)].map((b) => bcryptAlphabet[b % 64]).join("");
  const hash = execFileSync("perl", ["-e", "$p = <STDIN>; print crypt($p, $ARGV[0])", `$2b$10$${salt}`], {
    input: password,
  }).toString();
  if (!hash.startsWith("$2b$10$")) throw new Error(`crypt(3) made no bcrypt hash (${hash.slice(0, 7)}...)`);
  return `${user}:${hash}\n`;
}

function config(o: { storage: string; certDir: string; htpasswd: string; host: string }): string {
  return `version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: ${o.storage}
  delete:
    enabled: true
http:
  addr: ${o.host}
  tls:
    certificate: ${join(o.certDir, "registry.crt")}
    key: ${join(o.certDir, "registry.key")}
auth:
  htpasswd:
    realm: capstan-registry
    path: ${o.htpasswd}
`;
}

/**
 * containerd's registry host configuration (config_path in its config names the directory): pull
 * and resolve from this registry over HTTPS, trusting the cluster's CA.
 */
function hostsToml(host: string, caFile: string): string {
  return `server = "https://${host}"

[host."https://${host}"]
  capabilities = ["pull", "resolve"]
  ca = "${caFile}"
`;
}

/**
 * Starts the registry with a fresh password; writes containerd's hosts.toml for it into
 * `hostsDir`. Returns once /v2/ answers (401 without credentials, as it must).
 */
export async function startRegistry(o: {
  bin: NodeBinaries;
  /** The run's directory: the registry's files go to <dir>/registry. */
  dir: string;
  /** The cluster's CA directory (ca.crt, ca.key): signs the registry's certificate. */
  certDir: string;
  /** containerd's registry host configuration directory (its config_path). */
  hostsDir: string;
}): Promise<Registry> {
  const host = `${net.hostIp}:${port}`;
  const dir = join(o.dir, "registry");
  mkdirSync(join(dir, "storage"), { recursive: true });
  signCert(
    o.certDir,
    "registry",
    "/CN=capstan-registry",
    `subjectAltName=IP:${net.hostIp}\nextendedKeyUsage=serverAuth\n`,
  );
  const caFile = join(o.certDir, "ca.crt");
  const password = randomBytes(24).toString("base64url");
  const htpasswd = join(dir, "htpasswd");
  writeFileSync(htpasswd, htpasswdLine(username, password), { mode: 0o600 });
  const configFile = join(dir, "config.yml");
  writeFileSync(configFile, config({ storage: join(dir, "storage"), certDir: o.certDir, htpasswd, host }));
  mkdirSync(join(o.hostsDir, host), { recursive: true });
  writeFileSync(join(o.hostsDir, host, "hosts.toml"), hostsToml(host, caFile));

  const proc = startProcess("registry", o.bin.registry, ["serve", configFile], undefined, { detached: true });
  const dispatcher = new Agent({ connect: { ca: readFileSync(caFile, "utf8") } });
  await waitFor(
    "registry /v2/",
    async () => {
      const res = await fetch(`https://${host}/v2/`, { dispatcher, signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      return res.status === 401;
    },
    { timeoutMs: 30_000, proc },
  );
  await dispatcher.close();
  return { host, caFile, username, password, proc };
}
