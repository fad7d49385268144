// A service's main.ts as its own process on loopback for the fuzz tests: free public and
// internal ports, the caller's environment without any CAPSTAN_*, REDIS_URL or KUBECONFIG it may
// carry (each test says what the service gets), tracing off.
import { fileURLToPath } from "node:url";
import { freePort } from "../ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../ground/process.ts";

export interface ServiceProcess {
  proc: ManagedProcess;
  /** The public port's origin, e.g. http://127.0.0.1:41234. */
  origin: string;
  internalOrigin: string;
}

export async function startService(
  service: "gateway" | "search" | "scraper",
  env: Record<string, string>,
  ready: (s: Omit<ServiceProcess, "proc">) => Promise<boolean>,
  /** The variable naming the service's internal (metrics, health) port: the scraper's is ADMIN_PORT. */
  internalPortVar = "CAPSTAN_INTERNAL_PORT",
): Promise<ServiceProcess> {
  const main = fileURLToPath(new URL(`../../services/${service}/src/main.ts`, import.meta.url));
  const [port, internalPort] = [await freePort(), await freePort()];
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("CAPSTAN_") && k !== "REDIS_URL" && k !== "KUBECONFIG"),
  );
  const proc = startProcess(service, process.execPath, [main], {
    ...clean,
    PORT: String(port),
    [internalPortVar]: String(internalPort),
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    OTEL_SDK_DISABLED: "true",
    ...env,
  });
  const origins = { origin: `http://127.0.0.1:${port}`, internalOrigin: `http://127.0.0.1:${internalPort}` };
  await waitFor(`${service} ready`, () => ready(origins), { timeoutMs: 120_000, proc });
  return { proc, ...origins };
}
