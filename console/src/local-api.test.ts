// Standalone mode's API on a real temporary folder: create writes a file the launcher reads,
// patch rewrites only that document (comments of the others kept), a stale resourceVersion is
// refused, remove drops the document, keys are read from and deleted in keys.json.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readResources } from "@capstan/shared/resource-view";
import { describe, expect, it } from "vitest";
import { LocalApi, mergePatch } from "./local-api.ts";

const AGENT = `# The demo agent (this comment stays).
apiVersion: capstan.dev/v1alpha1
kind: Agent
metadata: {name: helper, namespace: demo}
spec: {}
---
# A channel.
apiVersion: capstan.dev/v1alpha1
kind: AccessChannel
metadata: {name: web, namespace: demo}
spec: {channelName: Web, agentRef: {name: helper}, qpm: 10}
`;

function folder() {
  const dir = mkdtempSync(join(tmpdir(), "capstan-local-api-"));
  const resourcesDir = join(dir, "resources");
  const stateDir = join(dir, "state");
  for (const d of [resourcesDir, join(stateDir, "resources")]) mkdirSync(d, { recursive: true });
  writeFileSync(join(resourcesDir, "demo.yaml"), AGENT);
  return { resourcesDir, stateDir, api: new LocalApi({ resourcesDir, stateDir }) };
}

describe("LocalApi", () => {
  it("merge-patches as RFC 7386 says", () => {
    expect(mergePatch({ a: 1, b: { c: 2, d: 3 } }, { b: { c: null, e: 4 }, f: [1] })).toEqual({
      a: 1,
      b: { d: 3, e: 4 },
      f: [1],
    });
  });

  it("creates, patches and removes resources in the folder the launcher reads", async () => {
    const { resourcesDir, api } = folder();
    await api.create("accesschannels", "demo", {
      apiVersion: "capstan.dev/v1alpha1",
      kind: "AccessChannel",
      metadata: { name: "new-one" },
      spec: { channelName: "New", agentRef: { name: "helper" } },
    });
    expect(readResources([resourcesDir]).map((r) => r.metadata.name)).toEqual(["new-one", "helper", "web"]);
    await expect(
      api.create("accesschannels", "demo", { metadata: { name: "bad" }, spec: { channelName: "x" } }),
    ).rejects.toMatchObject({ status: 422 });

    const web = await api.get("accesschannels", "demo", "web");
    await api.patch("accesschannels", "demo", "web", { spec: { qpm: 20 } });
    const text = readFileSync(join(resourcesDir, "demo.yaml"), "utf8");
    expect(text).toContain("# The demo agent (this comment stays).");
    expect(readResources([resourcesDir]).find((r) => r.metadata.name === "web")?.spec).toMatchObject({ qpm: 20 });
    await expect(
      api.patch("accesschannels", "demo", "web", { metadata: { resourceVersion: web.metadata.resourceVersion } }),
    ).rejects.toMatchObject({ status: 409 });

    await api.remove("accesschannels", "demo", "web");
    expect(readResources([resourcesDir]).map((r) => r.metadata.name)).toEqual(["new-one", "helper"]);
    await expect(api.get("accesschannels", "demo", "web")).rejects.toMatchObject({ status: 404 });
  });

  it("reads a key from keys.json as its Secret and deletes it there", async () => {
    const { stateDir, api } = folder();
    writeFileSync(join(stateDir, "keys.json"), JSON.stringify({ "AccessChannel/demo/web": { key: "cap_chat_x" } }));
    const secret = await api.getSecret("demo", "web-chat-key");
    expect(Buffer.from(secret.data?.key ?? "", "base64").toString()).toBe("cap_chat_x");
    await api.deleteSecret("demo", "web-chat-key");
    await expect(api.getSecret("demo", "web-chat-key")).rejects.toMatchObject({ status: 404 });
  });
});
