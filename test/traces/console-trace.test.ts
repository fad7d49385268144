// The console (`node console/src/main.ts`, as deployed) starts tracing like every other process:
// with an exporter set, a sign-in is a server span "POST /api/session" of the service
// capstan-console, with its call to the API server (the token review) as an HTTP client child.
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { builtAssets } from "../console/helpers.ts";
import { freePort } from "../ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../ground/process.ts";
import {
  parentOf,
  spanTree,
  startTraceReceiver,
  type Trace,
  type TraceReceiver,
  tagOf,
} from "../ground/trace-receiver.ts";

const CONSOLE = fileURLToPath(new URL("../../console/src/main.ts", import.meta.url));
let receiver: TraceReceiver;
let console_: ManagedProcess;
let url: string;

beforeAll(async () => {
  receiver = await startTraceReceiver();
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith("CAPSTAN_") && !k.startsWith("OTEL_") && k !== "KUBECONFIG" && k !== "REDIS_URL",
    ),
  );
  const [port, internal] = [await freePort(), await freePort()];
  console_ = startProcess("console", process.execPath, [CONSOLE], {
    ...clean,
    KUBECONFIG: inject("kubeconfig"),
    PORT: String(port),
    HOST: "127.0.0.1",
    CAPSTAN_INTERNAL_PORT: String(internal),
    CAPSTAN_CONSOLE_ASSETS_DIR: await builtAssets(),
    LOG_LEVEL: "warn",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.otlpEndpoint,
    OTEL_BSP_SCHEDULE_DELAY: "100",
    // Every trace recorded: the processes' default samples 1 % of new traces.
    OTEL_TRACES_SAMPLER: "parentbased_always_on",
  });
  url = `http://127.0.0.1:${port}`;
  await waitFor("console ready", async () => (await fetch(`http://127.0.0.1:${internal}/readyz`)).status === 200, {
    timeoutMs: 120_000,
    proc: console_,
  });
}, 240_000);

afterAll(async () => {
  await console_?.stop();
  await receiver?.stop();
});

describe("the console's traces", () => {
  it("traces a sign-in as a server span of capstan-console with the API server call below it", async () => {
    const res = await fetch(`${url}/api/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: "not-a-token-the-api-server-knows" }),
    });
    expect(res.status).toBe(401);
    let trace: Trace | undefined;
    await waitFor(
      "a POST /api/session trace with a client child",
      async () => {
        [trace] = await receiver.traces("capstan-console", "POST /api/session");
        return trace?.spans.some((s) => tagOf(s, "span.kind") === "client") === true;
      },
      { timeoutMs: 30_000 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${trace ? spanTree(trace) : "(no trace)"}`);
    });
    if (!trace) throw new Error("no trace");
    const server = trace.spans.find((s) => s.operationName === "POST /api/session");
    expect(server && tagOf(server, "span.kind")).toBe("server");
    expect(server && tagOf(server, "http.response.status_code")).toBe(401);
    const client = trace.spans.find((s) => tagOf(s, "span.kind") === "client");
    expect(client && parentOf(client)).toBe(server?.spanID);
    expect(Object.values(trace.processes).map((p) => p.serviceName)).toContain("capstan-console");
  });
});
