import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RequestContext } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { createRegistry } from "../metrics.ts";
import { kubeConfigFromFile, loadKubeConfig } from "./config.ts";
import { KubeHttp } from "./http.ts";

const dir = mkdtempSync(join(tmpdir(), "kc-"));
writeFileSync(join(dir, "ca.crt"), "CA");
// An exec credential plugin: prints an ExecCredential as kubectl's client-go expects.
const plugin = join(dir, "credential.sh");
writeFileSync(
  plugin,
  `#!/bin/sh\nprintf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-exec-%s"}}' "$1"\n`,
);
chmodSync(plugin, 0o755);
const path = join(dir, "config");
writeFileSync(
  path,
  `apiVersion: v1
kind: Config
current-context: b
contexts:
- name: a
  context: {cluster: one, user: u1}
- name: b
  context: {cluster: two, user: u2, namespace: team}
- name: c
  context: {cluster: one, user: u3}
clusters:
- name: one
  cluster: {server: "https://one:6443"}
- name: two
  cluster: {server: "https://two:6443", certificate-authority: ca.crt}
users:
- name: u1
  user: {token: token-one}
- name: u2
  user: {token: secret-token, client-certificate-data: ${Buffer.from("CERT").toString("base64")}}
- name: u3
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ${plugin}
      args: [c]
      interactiveMode: Never
`,
);

async function authorization(http: KubeHttp): Promise<string | undefined> {
  const ctx = new RequestContext(`${http.server}/api`, "GET");
  await http.authenticate(ctx);
  return ctx.getHeaders().Authorization;
}

const client = (kc: ReturnType<typeof loadKubeConfig>) => new KubeHttp(kc, createRegistry({ defaultMetrics: false }));

describe("loadKubeConfig (client-node's KubeConfig)", () => {
  it("uses the file's current context: its server, CA, namespace and token", async () => {
    const http = client(kubeConfigFromFile(path));
    expect(http.server).toBe("https://two:6443");
    expect(http.namespace).toBe("team");
    expect(http.kubeConfig.getCurrentCluster()?.caFile).toBe(join(dir, "ca.crt"));
    expect(await authorization(http)).toBe("Bearer secret-token");
  });

  it("honours the selected context (option, or CAPSTAN_KUBE_CONTEXT)", async () => {
    const a = client(loadKubeConfig({ kubeconfig: path, context: "a" }));
    expect(a.server).toBe("https://one:6443");
    expect(await authorization(a)).toBe("Bearer token-one");
    const viaEnv = loadKubeConfig({}, { KUBECONFIG: path, CAPSTAN_KUBE_CONTEXT: "a" });
    expect(viaEnv.getCurrentUser()?.name).toBe("u1");
    expect(() => loadKubeConfig({ kubeconfig: path, context: "nope" })).toThrow(/no context "nope"/);
  });

  it("authenticates an exec credential plugin's user with the token it prints", async () => {
    const http = client(loadKubeConfig({ kubeconfig: path, context: "c" }));
    expect(await authorization(http)).toBe("Bearer from-exec-c");
  });

  it("merges every file KUBECONFIG lists, the first current-context winning", () => {
    const other = join(dir, "other");
    writeFileSync(
      other,
      `apiVersion: v1
kind: Config
current-context: x
contexts: [{name: x, context: {cluster: three, user: ux}}]
clusters: [{name: three, cluster: {server: "https://three:6443"}}]
users: [{name: ux, user: {token: t}}]
`,
    );
    const kc = loadKubeConfig({}, { KUBECONFIG: `${path}:${other}` });
    expect(kc.getCurrentContext()).toBe("b");
    expect(kc.getContexts().map((c) => c.name)).toEqual(["a", "b", "c", "x"]);
    expect(loadKubeConfig({ context: "x" }, { KUBECONFIG: `${path}:${other}` }).getCurrentCluster()?.server).toBe(
      "https://three:6443",
    );
  });
});
