// The gateway as deployed (services/gateway/src/main.ts) for the topology tests: its Redis comes
// from the environment only (REDIS_MODE and the rest, as the operator renders them), its one
// channel from a YAML folder; the process's output is kept so a test can read its log lines.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateKey, hashKey } from "@capstan/shared";
import { freePort } from "../ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../ground/process.ts";

const MAIN = fileURLToPath(new URL("../../services/gateway/src/main.ts", import.meta.url));

export interface GatewayProcess {
  url: string;
  internalUrl: string;
  key: string;
  proc: ManagedProcess;
  stop(): Promise<void>;
}

/** A gateway process with `env` (REDIS_* among it) serving channel demo/<name> at `qpm`. */
export async function startGatewayProcess(
  env: Record<string, string>,
  name: string,
  qpm: number,
): Promise<GatewayProcess> {
  const dir = mkdtempSync(join(tmpdir(), "capstan-topology-"));
  const key = generateKey("chat");
  writeFileSync(
    join(dir, "resources.yaml"),
    `apiVersion: capstan.dev/v1alpha1
kind: Agent
metadata: {name: offline, namespace: demo}
spec: {description: offline}
---
apiVersion: capstan.dev/v1alpha1
kind: AccessChannel
metadata: {name: ${name}, namespace: demo}
spec: {channelName: ${name}, agentRef: {name: offline}, qpm: ${qpm}}
status: {keyHash: "${hashKey(key)}"}
`,
  );
  const [port, internalPort] = [await freePort(), await freePort()];
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("CAPSTAN_") && !k.startsWith("REDIS_")),
  );
  const proc = startProcess("gateway", process.execPath, [MAIN], {
    ...clean,
    PORT: String(port),
    CAPSTAN_INTERNAL_PORT: String(internalPort),
    CAPSTAN_RESOURCES_DIR: dir,
    HOST: "127.0.0.1",
    OTEL_SDK_DISABLED: "true",
    ...env,
  });
  const internalUrl = `http://127.0.0.1:${internalPort}`;
  try {
    await waitFor("gateway ready", async () => (await fetch(`${internalUrl}/readyz`)).status === 200, {
      timeoutMs: 60_000,
      proc,
    });
  } catch (err) {
    await proc.stop();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url: `http://127.0.0.1:${port}`,
    internalUrl,
    key,
    proc,
    stop: async () => {
      await proc.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
