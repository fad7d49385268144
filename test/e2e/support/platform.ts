// Installing Capstan on the e2e node the way a platform team would: `helm upgrade --install` of
// the chart and images this repository released to the node's registry (support/release.ts), with
// a pull Secret and a TLS Secret for the ingress, then examples/. Search's claim is the chart's own, bound by the node's
// default StorageClass (test/ground/node-storage.ts), as on a cluster with dynamic provisioning.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Agent } from "undici";
import { inject } from "vitest";
import { helm } from "../../ground/helm.ts";
import { rawExamples, type TestKube } from "../../ground/kube-client.ts";
import { net } from "../../ground/node-config.ts";
import { apply, condition, deploymentReady, eventually, get, type Obj, secretValue } from "./kube.ts";
import { chartArgs, PULL_SECRET, pullSecret, release } from "./release.ts";

export const RELEASE = "capstan";
export const SYSTEM_NS = "capstan-system";
export const DEMO_NS = "capstan-demo";
/** The host name the ingress answers to; the tests resolve it to the ingress's loopback address. */
export const INGRESS_HOST = "capstan.test";
/** The console's host of its own (console.hosts), on the same ingress and certificate. */
export const CONSOLE_HOST = "console.capstan.test";
export const TLS_SECRET = "capstan-ingress-tls";

export interface Tls {
  ca: string;
  dir: string;
}

/** A CA and a serving certificate for INGRESS_HOST and CONSOLE_HOST, made with openssl in a temporary directory. */
export function makeTls(dir: string): Tls {
  mkdirSync(dir, { recursive: true });
  const run = (args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  run(
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2"].concat([
      "-subj",
      "/CN=capstan-e2e-ca",
    ]),
  );
  run([
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    "tls.key",
    "-out",
    "tls.csr",
    "-subj",
    `/CN=${INGRESS_HOST}`,
  ]);
  writeFileSync(
    join(dir, "tls.ext"),
    `subjectAltName=DNS:${INGRESS_HOST},DNS:${CONSOLE_HOST}\nextendedKeyUsage=serverAuth\n`,
  );
  run(
    ["x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial"].concat([
      "-out",
      "tls.crt",
      "-days",
      "2",
      "-extfile",
      "tls.ext",
    ]),
  );
  return { ca: readFileSync(join(dir, "ca.crt"), "utf8"), dir };
}

/** Base URL of the ingress over HTTPS, by host name (the port is the ingress's loopback port). */
export function ingressBase(): string {
  const https = new URL(inject("e2eIngressHttps"));
  return `https://${INGRESS_HOST}:${https.port || 443}`;
}

/** An undici dispatcher that trusts the test CA and sends INGRESS_HOST to the ingress's address. */
export function ingressDispatcher(ca: string): Agent {
  const address = new URL(inject("e2eIngressHttps")).hostname;
  return new Agent({
    connect: {
      ca,
      servername: INGRESS_HOST,
      // Node asks with { all: true } and then expects a list of addresses.
      lookup: (_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) =>
        opts.all ? cb(null, [{ address, family: 4 }]) : cb(null, address, 4),
    } as never,
  });
}

/** The values a local install uses (with the release's images by digest): dev Redis, ingress with TLS. */
export function installValues(extra: string[] = []): string[] {
  const set = ["redis.deploy.enabled=true", `imagePullSecrets[0].name=${PULL_SECRET}`];
  set.push(
    "operator.replicas=1",
    "gateway.replicas=2",
    "ingress.enabled=true",
    "ingress.className=traefik",
    `ingress.hosts[0]=${INGRESS_HOST}`,
    `ingress.tls[0].secretName=${TLS_SECRET}`,
    `ingress.tls[0].hosts[0]=${INGRESS_HOST}`,
    // The console on a host of its own, as docs/install.md shows (test/e2e/console-browser.test.ts).
    `console.hosts[0]=${CONSOLE_HOST}`,
    `ingress.tls[0].hosts[1]=${CONSOLE_HOST}`,
    // Traefik runs on the node and reaches pods from the bridge's host address, and only from
    // there: naming that address admits it to search's public port (no pod may call that port)
    // and makes search believe its X-Forwarded-For, so search sees the real client's address (the
    // examples allow 127.0.0.1).
    `networkPolicy.ingressController.ipBlocks[0]=${net.hostIp}/32`,
    // The chart's platform Scraper (KnowledgeBases without scraperRef) scrapes pages served in the
    // cluster: the platform team allows the cluster's ranges, as for the example Scraper.
    "scraping.platformScraper.spec.allowedHosts[0]=198.18.0.0/15",
    // One console: the node has 2 CPUs to request, and the platform (two gateways, search, the
    // operator, the dev Redis, the platform Scraper and the example Scraper's two pods) already
    // requests 1,650m of them; a second console left no room for the surge pod of the example
    // Scraper's rolling update (FailedScheduling: Insufficient cpu). Two consoles sharing their
    // sessions are tested in test/console/redis-sessions.test.ts.
    "console.replicas=1",
    // Sized for this node as a platform team sizes for a small one: every Scraper pod (the
    // example's two, the platform's one, and a rolling update's surge pod) asks for 150m, not
    // 350m, so rollouts of search and the Scrapers still find CPU to schedule on.
    "scraper.resources.requests.cpu=50m",
    "scraper.renderResources.requests.cpu=100m",
    ...extra,
  );
  return set;
}

export async function helmInstall(home: string, set: string[], timeoutMs = 240_000) {
  const args = ["upgrade", "--install", RELEASE, ...chartArgs(), "-n", SYSTEM_NS, "--create-namespace"];
  args.push("--kubeconfig", inject("e2eKubeconfig"), "--wait", "--timeout", `${Math.floor(timeoutMs / 1000)}s`);
  const res = await helm([...args, ...set.flatMap((s) => ["--set", s])], home, timeoutMs + 30_000);
  if (res.code !== 0) throw new Error(`helm upgrade --install failed:\n${res.stderr}\n${res.stdout}`);
  return res;
}

/**
 * What must exist before the chart goes in: the namespaces, the registry's pull Secret in each
 * (the examples' Scraper runs in DEMO_NS) and the ingress's TLS Secret.
 */
export async function prerequisites(kube: TestKube, tls: Tls): Promise<void> {
  for (const ns of [SYSTEM_NS, DEMO_NS]) {
    await apply(kube, { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
    await apply(kube, pullSecret(ns) as Obj);
  }
  await apply(kube, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: TLS_SECRET, namespace: SYSTEM_NS },
    ...({
      type: "kubernetes.io/tls",
      stringData: {
        "tls.crt": readFileSync(join(tls.dir, "tls.crt"), "utf8"),
        "tls.key": readFileSync(join(tls.dir, "tls.key"), "utf8"),
      },
    } as object),
  });
}

/** examples/ as a platform team applies them (kubectl apply -f examples/). */
export async function applyExamples(kube: TestKube): Promise<void> {
  const objects = rawExamples() as Obj[];
  for (const o of objects.filter((o) => o.kind === "Namespace")) await apply(kube, o);
  for (const o of objects.filter((o) => o.kind !== "Namespace")) await apply(kube, o);
}

/**
 * The whole platform: chart installed (with `extraValues` as more --set), operator Ready, examples
 * applied, data plane Ready. The next file's call installs without them again. `firstAnswer`, when
 * given, runs from the moment the examples are applied, beside the waits, and should resolve once
 * a user would have had their first answer: the time from `helm install` to then is printed, so
 * the figure is the platform's and not the order of this harness's waits (it waits for the example
 * Scraper's Chromium pods too, which no chat answer needs).
 */
export async function ensurePlatform(
  kube: TestKube,
  home: string,
  extraValues: string[] = [],
  firstAnswer?: (tls: Tls) => Promise<void>,
): Promise<{ tls: Tls; images: Record<string, string>; installStarted: number }> {
  const images = release().images;
  const tls = makeTls(join(home, "tls"));
  await prerequisites(kube, tls);
  const installStarted = Date.now();
  const installed = await helmInstall(home, installValues(extraValues));
  // What helm says (the chart it pulled from the registry, with its digest): docs/install.md shows it.
  console.log(`[e2e] helm install --wait: ${Date.now() - installStarted} ms\n${installed.stderr}${installed.stdout}`);
  await applyExamples(kube);
  const answered = firstAnswer?.(tls).then(() =>
    console.log(`[e2e] helm install to the first chat answer through the ingress: ${Date.now() - installStarted} ms`),
  );
  // Each Ready as it comes (the waits overlap: a later one may print the time of the slowest so far).
  for (const [ns, name] of [
    [SYSTEM_NS, "capstan-gateway"],
    [SYSTEM_NS, "capstan-search"],
    [DEMO_NS, "web"],
  ] as const) {
    await deploymentReady(kube, ns, name);
    console.log(`[e2e] helm install to ${ns}/${name} Ready: ${Date.now() - installStarted} ms`);
  }
  console.log(`[e2e] helm install to the examples' data plane Ready: ${Date.now() - installStarted} ms`);
  // Chat answers from product-docs: a question asked before its first ingestion finished is
  // rightly answered "I don't know", so the tests start once the knowledge base is searchable.
  await eventually("KnowledgeBase product-docs searchable", async () => {
    const kb = await get(kube, "KnowledgeBase", "capstan.dev/v1alpha1", "product-docs", DEMO_NS);
    return (kb?.status?.chunks as number) > 0 && condition(kb, "Ready")?.status === "True" ? kb : undefined;
  });
  console.log(`[e2e] helm install to the example knowledge base searchable: ${Date.now() - installStarted} ms`);
  await answered;
  return { tls, images, installStarted };
}

/** The plaintext key of an AccessChannel or SearchKey, read from the Secret its status names. */
export async function keyOf(kube: TestKube, kind: "AccessChannel" | "SearchKey", name: string, ns = DEMO_NS) {
  const obj = await get(kube, kind, "capstan.dev/v1alpha1", name, ns);
  const secret = obj?.status?.secretName as string | undefined;
  if (!secret) throw new Error(`${kind} ${ns}/${name} has no status.secretName yet`);
  return secretValue(kube, ns, secret, "key");
}
