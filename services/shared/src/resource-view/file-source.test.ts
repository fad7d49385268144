import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileSource } from "./file-source.ts";
import { ResourceView } from "./view.ts";

const channel = (name: string, qpm: number) => `apiVersion: capstan.dev/v1alpha1
kind: AccessChannel
metadata: {name: ${name}, namespace: demo}
spec: {channelName: ${name}, agentRef: {name: a}, qpm: ${qpm}}
status: {keyHash: "sha256:${"0".repeat(64)}"}
`;

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("FileSource", () => {
  it("loads every kind, applies defaults, and reloads on change keeping the last good state", async () => {
    const dir = mkdtempSync(join(tmpdir(), "capstan-view-"));
    writeFileSync(join(dir, "a.yaml"), `${channel("one", 5)}---\n${channel("two", 7)}`);
    writeFileSync(join(dir, "ignored.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n");
    const view = new ResourceView();
    const errors: Error[] = [];
    const source = new FileSource(view, { dirs: [dir], onError: (e) => errors.push(e) });
    source.start();
    try {
      expect(view.hasSynced("AccessChannel", "Agent")).toBe(true);
      expect(view.list("AccessChannel").map((c) => c.spec.qpm)).toEqual([5, 7]);
      expect(view.get("AccessChannel", "demo", "one")?.spec.keepHistory).toBe(false); // default applied
      expect(view.get("AccessChannel", "demo", "one")?.status?.keyHash).toMatch(/^sha256:/);

      const changed = new Promise<void>((resolve) => view.onChange(() => resolve()));
      writeFileSync(join(dir, "a.yaml"), channel("one", 50));
      await changed;
      expect(view.list("AccessChannel").map((c) => c.spec.qpm)).toEqual([50]);

      writeFileSync(join(dir, "a.yaml"), channel("one", 0)); // qpm 0 is invalid
      await until(() => errors.length > 0);
      expect(errors[0]?.message).toMatch(/spec\.qpm/);
      expect(view.get("AccessChannel", "demo", "one")?.spec.qpm).toBe(50);
    } finally {
      source.stop();
    }
  });
});
