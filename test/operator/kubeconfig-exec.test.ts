// The operator and a data-plane process (the gateway), each started as deployed (src/main.ts),
// reach the API server through a kubeconfig whose user is an `exec` credential plugin: a script
// that prints an ExecCredential holding a ServiceAccount token the test API server accepts, as
// EKS, GKE and AKS plugins do. The kubeconfig has several contexts and the current one points at
// a server where nothing listens, so nothing works unless the selected context is honoured:
// CAPSTAN_KUBE_CONTEXT for the operator, the file's current-context for the gateway.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { stringify } from "yaml";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import { freePort } from "../ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../ground/process.ts";
import { CAP, create, get, type Obj, whenCondition } from "./helpers.ts";

const OPERATOR = fileURLToPath(new URL("../../operator/src/main.ts", import.meta.url));
const GATEWAY = fileURLToPath(new URL("../../services/gateway/src/main.ts", import.meta.url));
const ns = `exec-${process.pid}-${Date.now().toString(36)}`;
const dir = mkdtempSync(join(tmpdir(), "exec-kc-"));
const calls = join(dir, "calls.log");
const running: ManagedProcess[] = [];
let admin: TestKube;

afterAll(async () => {
  await Promise.all(running.map((p) => p.stop()));
  await admin?.json(`/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${ns}`, { method: "DELETE" });
  rmSync(dir, { recursive: true, force: true });
});

/** A ServiceAccount bound to cluster-admin and a 1-hour token of it (the chart's exact rules: rbac.test.ts). */
async function serviceAccountToken(): Promise<string> {
  await create(admin, { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "laptop", namespace: ns } });
  await admin.json("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
    method: "POST",
    body: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: ns },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
      subjects: [{ kind: "ServiceAccount", name: "laptop", namespace: ns }],
    },
  });
  const tr = await admin.json<{ status: { token: string } }>(`/api/v1/namespaces/${ns}/serviceaccounts/laptop/token`, {
    method: "POST",
    body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 3600 } },
  });
  return tr.status.token;
}

/** A kubeconfig: context "decoy" (current unless told) on a closed port, context "plugin" on the test API server. */
function writeKubeconfig(name: string, currentContext: string, plugin: string): string {
  const harness = admin.kubeConfig.getCurrentCluster();
  const ca = harness?.caData ?? readFileSync(harness?.caFile as string).toString("base64");
  const path = join(dir, name);
  writeFileSync(
    path,
    stringify({
      apiVersion: "v1",
      kind: "Config",
      "current-context": currentContext,
      clusters: [
        { name: "nowhere", cluster: { server: "https://127.0.0.1:9", "certificate-authority-data": ca } },
        { name: "harness", cluster: { server: harness?.server, "certificate-authority-data": ca } },
      ],
      users: [
        { name: "nobody", user: { token: "not-a-token" } },
        {
          name: "laptop",
          user: {
            exec: {
              apiVersion: "client.authentication.k8s.io/v1",
              command: plugin,
              args: ["--cluster", "harness"],
              interactiveMode: "Never",
            },
          },
        },
      ],
      contexts: [
        { name: "decoy", context: { cluster: "nowhere", user: "nobody" } },
        { name: "plugin", context: { cluster: "harness", user: "laptop", namespace: ns } },
      ],
    }),
  );
  return path;
}

function start(name: string, main: string, env: Record<string, string>): ManagedProcess {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("CAPSTAN_") && k !== "KUBECONFIG" && k !== "REDIS_URL"),
  );
  const proc = startProcess(name, process.execPath, [main], { ...clean, OTEL_SDK_DISABLED: "true", ...env });
  running.push(proc);
  return proc;
}

beforeAll(async () => {
  admin = harnessKubeClient();
  await installCrds(admin);
  await ensureNamespace(admin, ns);
});

describe("a kubeconfig with an exec credential plugin and several contexts", () => {
  it("the operator and the gateway both work through it, each in the context selected", async () => {
    const token = await serviceAccountToken();
    writeFileSync(join(dir, "token"), token);
    const plugin = join(dir, "credential-plugin.sh");
    writeFileSync(
      plugin,
      `#!/bin/sh
# Prints an ExecCredential (client.authentication.k8s.io/v1) with the token, and logs the call.
echo "$*" >> ${calls}
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}' "$(cat ${join(dir, "token")})"
`,
    );
    chmodSync(plugin, 0o755);
    const selectedByEnv = writeKubeconfig("decoy-current", "decoy", plugin);
    const selectedInFile = writeKubeconfig("plugin-current", "plugin", plugin);

    const health = await freePort();
    const operator = start("operator", OPERATOR, {
      KUBECONFIG: selectedByEnv,
      CAPSTAN_KUBE_CONTEXT: "plugin",
      CAPSTAN_NAMESPACE: ns,
      CAPSTAN_WATCH_NAMESPACE: ns,
      LEADER_ELECT: "false",
      HEALTH_PORT: String(health),
      METRICS_PORT: String(await freePort()),
      LOG_LEVEL: "warn",
    });
    await waitFor(
      "operator ready (caches synced through the plugin's token)",
      async () => (await fetch(`http://127.0.0.1:${health}/readyz`)).status === 200,
      { timeoutMs: 180_000, proc: operator },
    );

    await create(admin, {
      apiVersion: CAP,
      kind: "Agent",
      metadata: { name: "assistant", namespace: ns },
      // Ready needs a provider (never called here: the gateway is only asked for its models).
      spec: { provider: { baseURL: "https://llm.example/v1", model: "m" } },
    });
    await create(admin, {
      apiVersion: CAP,
      kind: "AccessChannel",
      metadata: { name: "web", namespace: ns },
      spec: { channelName: "web", agentRef: { name: "assistant" } },
    });
    await whenCondition(admin, "AccessChannel", ns, "web", "Ready", "True").catch((err: Error) => {
      throw new Error(`${err.message}\noperator output:\n${operator.output()}`);
    });
    const secret = (await get(admin, "v1", "Secret", ns, "web-chat-key")) as Obj;
    const key = Buffer.from(secret.data?.key ?? "", "base64").toString("utf8");
    expect(key).toMatch(/^cap_chat_/);

    const port = await freePort();
    const gateway = start("gateway", GATEWAY, {
      KUBECONFIG: selectedInFile,
      CAPSTAN_NAMESPACE: ns,
      REDIS_URL: inject("redisUrl"),
      PORT: String(port),
      HOST: "127.0.0.1",
    });
    await waitFor(
      "gateway knows the channel the operator made ready",
      async () =>
        (await fetch(`http://127.0.0.1:${port}/api/v1/models`, { headers: { authorization: `Bearer ${key}` } }))
          .status === 200,
      { timeoutMs: 180_000, proc: gateway },
    );

    // Both processes asked the plugin (client-node caches the credential until it expires).
    const log = readFileSync(calls, "utf8").trim().split("\n");
    expect(log.length).toBeGreaterThanOrEqual(2);
    expect(log.every((l) => l === "--cluster harness")).toBe(true);
    expect(operator.output()).not.toContain(token);
    expect(gateway.output()).not.toContain(token);
  }, 600_000);
});
