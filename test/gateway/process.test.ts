// The gateway process (src/main.ts) as it is deployed: standalone from a folder of YAML with no
// Redis (in-process limiter, said at start-up, hot reload of the files), and in "cluster" mode
// reading AccessChannels and Agents from a real kube-apiserver through a read-only watch.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateKey, hashKey } from "@capstan/shared";
import OpenAI from "openai";
import { afterAll, describe, expect, inject, it } from "vitest";
import { spellings } from "../../services/shared/src/http.fixture.ts";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import { freePort } from "../ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../ground/process.ts";
import { rawRequest } from "../ground/raw-http.ts";
import { client } from "./helpers.ts";

const MAIN = fileURLToPath(new URL("../../services/gateway/src/main.ts", import.meta.url));
const running: ManagedProcess[] = [];
const dirs: string[] = [];

afterAll(async () => {
  await Promise.all(running.map((p) => p.stop()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function startMain(
  env: Record<string, string>,
): Promise<{ url: string; internalUrl: string; proc: ManagedProcess }> {
  const [port, internalPort] = [await freePort(), await freePort()];
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("CAPSTAN_") && k !== "REDIS_URL" && k !== "KUBECONFIG"),
  );
  const proc = startProcess("gateway", process.execPath, [MAIN], {
    ...clean,
    PORT: String(port),
    CAPSTAN_INTERNAL_PORT: String(internalPort),
    HOST: "127.0.0.1",
    OTEL_SDK_DISABLED: "true",
    ...env,
  });
  running.push(proc);
  const url = `http://127.0.0.1:${port}`;
  const internalUrl = `http://127.0.0.1:${internalPort}`;
  await waitFor("gateway ready", async () => (await fetch(`${internalUrl}/readyz`)).status === 200, {
    timeoutMs: 60_000,
    proc,
  });
  return { url, internalUrl, proc };
}

function channelYaml(name: string, key: string, qpm: number): string {
  return `apiVersion: capstan.dev/v1alpha1
kind: AccessChannel
metadata:
  name: ${name}
  namespace: demo
spec:
  channelName: ${name}
  agentRef:
    name: offline
  qpm: ${qpm}
status:
  keyHash: "${hashKey(key)}"
`;
}

const AGENT_YAML = `apiVersion: capstan.dev/v1alpha1
kind: Agent
metadata:
  name: offline
  namespace: demo
spec:
  description: no provider, no knowledge
`;

describe("standalone process", () => {
  it("serves from YAML files with the in-process limiter, says so at start-up, and reloads changed files", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gw-resources-"));
    dirs.push(dir);
    const key = generateKey("chat");
    writeFileSync(join(dir, "agent.yaml"), AGENT_YAML);
    writeFileSync(join(dir, "channel.yaml"), channelYaml("web", key, 1));
    const { url, internalUrl, proc } = await startMain({ CAPSTAN_RESOURCES_DIR: dir });
    // Metrics and health answer on the internal port only; the public port does not know them,
    // however the path is spelt (percent-encoded, dot segments, slashes, case).
    for (const path of ["/metrics", "/healthz", "/readyz"]) {
      for (const spelt of spellings(path)) {
        const res = await rawRequest(url, spelt);
        expect(res.status, spelt).toBe(404);
        expect(res.body).not.toContain("gateway_");
      }
      expect((await fetch(`${internalUrl}${path}`)).status, path).toBe(200);
    }
    // and the internal port serves nothing of the API
    expect(
      (await rawRequest(internalUrl, "/api/v1/models", { headers: { authorization: `Bearer ${key}` } })).status,
    ).toBe(404);
    expect(await (await fetch(`${internalUrl}/metrics`)).text()).toContain("gateway_");
    // The child's log pipe may lag its HTTP answers: wait for the line rather than read it once.
    await waitFor(
      "start-up line about the limiter",
      async () => /REDIS_URL not set: QPM limits are enforced in process/.test(proc.output()),
      {
        timeoutMs: 30_000,
        proc,
      },
    );

    const sdk = client(url, key);
    const res = await sdk.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });
    expect(res.choices[0]?.message.content).toMatch(/no knowledge bases configured/);
    expect(
      await sdk.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] }).catch((e) => e),
    ).toBeInstanceOf(OpenAI.RateLimitError);

    // A second channel appears when its file is written.
    const key2 = generateKey("chat");
    writeFileSync(join(dir, "channel2.yaml"), channelYaml("app", key2, 5));
    await waitFor(
      "new channel loaded",
      async () =>
        (await fetch(`${url}/api/v1/models`, { headers: { authorization: `Bearer ${key2}` } })).status === 200,
      { timeoutMs: 30_000, proc },
    );
    expect(proc.output()).not.toContain(key);
    expect(proc.output()).not.toContain(key2);
    await proc.stop();
    expect(proc.child.exitCode).toBe(0);
  });
});

describe("strict environment", () => {
  it("a misspelled CAPSTAN_ variable stops start-up (exit 2), naming it and the nearest valid one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gw-resources-"));
    dirs.push(dir);
    const clean = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith("CAPSTAN_") && k !== "REDIS_URL" && k !== "KUBECONFIG"),
    );
    const proc = startProcess("gateway", process.execPath, [MAIN], {
      ...clean,
      PORT: String(await freePort()),
      CAPSTAN_INTERNAL_PORT: String(await freePort()),
      HOST: "127.0.0.1",
      OTEL_SDK_DISABLED: "true",
      CAPSTAN_RESOURCES_DIR: dir,
      CAPSTAN_SEARCH_TIMEOUT: "5000",
    });
    running.push(proc);
    const code = await new Promise<number | null>((resolve) => {
      if (proc.child.exitCode !== null) resolve(proc.child.exitCode);
      else proc.child.once("exit", (c) => resolve(c));
    });
    expect(code).toBe(2);
    expect(proc.output()).toContain(
      "CAPSTAN_SEARCH_TIMEOUT: unknown variable (did you mean CAPSTAN_SEARCH_TIMEOUT_MS?)",
    );
  });
});

describe("cluster mode (real kube-apiserver)", () => {
  it("learns channels and agents from a read-only watch and follows changes (expiry → 401)", async () => {
    const kube: TestKube = harnessKubeClient();
    await installCrds(kube);
    const ns = `gw-${Date.now().toString(36)}`;
    await ensureNamespace(kube, ns);
    const base = `/apis/capstan.dev/v1alpha1/namespaces/${ns}`;
    await kube.json(`${base}/agents`, {
      method: "POST",
      body: { apiVersion: "capstan.dev/v1alpha1", kind: "Agent", metadata: { name: "offline" }, spec: {} },
    });
    await kube.json(`${base}/accesschannels`, {
      method: "POST",
      body: {
        apiVersion: "capstan.dev/v1alpha1",
        kind: "AccessChannel",
        metadata: { name: "web" },
        spec: { channelName: "web", agentRef: { name: "offline" } },
      },
    });
    // The operator would publish the key's hash in status; here the test does.
    const key = generateKey("chat");
    const setStatus = async (status: Record<string, unknown>) => {
      const current = await kube.json<Record<string, unknown>>(`${base}/accesschannels/web`);
      await kube.json(`${base}/accesschannels/web/status`, { method: "PUT", body: { ...current, status } });
    };
    await setStatus({ keyHash: hashKey(key) });

    const { url, proc } = await startMain({
      KUBECONFIG: inject("kubeconfig"),
      CAPSTAN_NAMESPACE: ns,
      REDIS_URL: inject("redisUrl"),
    });
    const sdk = client(url, key);
    await waitFor(
      "channel visible",
      async () => (await fetch(`${url}/api/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status === 200,
      { timeoutMs: 30_000, proc },
    );
    const res = await sdk.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });
    expect(res.object).toBe("chat.completion");
    expect(res.model).toBe("offline");

    await setStatus({ keyHash: hashKey(key), expiresAt: "2020-01-01T00:00:00Z" });
    await waitFor(
      "expiry seen",
      async () => (await fetch(`${url}/api/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status === 401,
      { timeoutMs: 30_000, proc },
    );
    const err = await sdk.chat.completions
      .create({ model: "m", messages: [{ role: "user", content: "hi" }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(err.code).toBe("expired_api_key");
    await proc.stop();
  });
});
