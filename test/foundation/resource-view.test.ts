// The data plane's read-only view fed by a real API server: it lists, follows changes (spec and
// status), and keeps its last state through an API server restart, then resumes by itself.
import { API_VERSION } from "@capstan/shared/api";
import { collectionPath } from "@capstan/shared/kube";
import { KubeSource, ResourceView } from "@capstan/shared/resource-view";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KubeControlPlane, startKube } from "../ground/kube.ts";
import { ensureNamespace, installCrds, kubeHttpFrom, type TestKube } from "../ground/kube-client.ts";

const NS = "view";
let kube: KubeControlPlane;
let client: TestKube;
let view: ResourceView;
let source: KubeSource;

async function until(check: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const channels = () => collectionPath(API_VERSION, "accesschannels", NS);

beforeAll(async () => {
  // A private control plane: this test restarts its API server.
  kube = await startKube();
  client = kubeHttpFrom(kube.kubeconfig);
  await installCrds(client);
  await ensureNamespace(client, NS);
  await client.json(channels(), {
    method: "POST",
    body: {
      apiVersion: API_VERSION,
      kind: "AccessChannel",
      metadata: { name: "first", namespace: NS },
      spec: { channelName: "First", agentRef: { name: "a" } },
    },
  });
  view = new ResourceView();
  source = new KubeSource(view, client, { kinds: ["AccessChannel", "Agent"] });
  await source.start();
});

afterAll(async () => {
  source?.stop();
  await kube?.stop();
});

describe("KubeSource", () => {
  it("lists existing objects with the API server's defaults", () => {
    expect(view.hasSynced("AccessChannel", "Agent")).toBe(true);
    expect(view.get("AccessChannel", NS, "first")?.spec.qpm).toBe(100);
  });

  it("follows creates, status updates and deletes", async () => {
    await client.json(channels(), {
      method: "POST",
      body: {
        apiVersion: API_VERSION,
        kind: "AccessChannel",
        metadata: { name: "second", namespace: NS },
        spec: { channelName: "Second", agentRef: { name: "a" }, qpm: 7 },
      },
    });
    await until(() => view.get("AccessChannel", NS, "second")?.spec.qpm === 7, "the created channel");

    const hash = `sha256:${"a".repeat(64)}`;
    await client.json(`${channels()}/second/status`, {
      method: "PATCH",
      contentType: "application/merge-patch+json",
      body: { status: { keyHash: hash } },
    });
    await until(() => view.get("AccessChannel", NS, "second")?.status?.keyHash === hash, "the status update");

    await client.json(`${channels()}/second`, { method: "DELETE" });
    await until(() => view.get("AccessChannel", NS, "second") === undefined, "the delete");
  });

  it("keeps serving its last state while the API server restarts, then resumes watching", async () => {
    const restarted = kube.restartApiServer();
    // While the API server is down the view still answers from memory.
    expect(view.get("AccessChannel", NS, "first")?.spec.channelName).toBe("First");
    await restarted;
    await client.json(channels(), {
      method: "POST",
      body: {
        apiVersion: API_VERSION,
        kind: "AccessChannel",
        metadata: { name: "third", namespace: NS },
        spec: { channelName: "Third", agentRef: { name: "a" } },
      },
    });
    await until(() => view.get("AccessChannel", NS, "third") !== undefined, "a change made after the restart");
    expect(view.get("AccessChannel", NS, "first")?.spec.channelName).toBe("First");
  });
});
