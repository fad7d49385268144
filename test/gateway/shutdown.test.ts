// SIGTERM to the gateway process (src/main.ts) during streams: readiness fails at once while
// requests are still served; a stream that ends within the drain window completes with [DONE];
// a 40 s stream longer than the window ends with an OpenAI error event, which the official SDK
// raises (never a truncated answer returned as complete); the process exits 0 within the grace.
// A keep-alive connection opened before SIGTERM still carries a request until the listener
// closes (an ingress reusing it then gets an answer, not a closed socket).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateKey, hashKey } from "@capstan/shared";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../ground/process.ts";
import { type FakeOpenAI, startFakeOpenAI } from "./fake-openai.ts";
import { client } from "./helpers.ts";

const MAIN = fileURLToPath(new URL("../../services/gateway/src/main.ts", import.meta.url));
let fake: FakeOpenAI;
let dir: string;
let proc: ManagedProcess | undefined;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  dir = mkdtempSync(join(tmpdir(), "gw-shutdown-"));
});
afterAll(async () => {
  await proc?.stop();
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

function resources(key: string): string {
  const agent = (name: string, model: string) => `apiVersion: capstan.dev/v1alpha1
kind: Agent
metadata: { name: ${name}, namespace: demo }
spec:
  provider: { baseURL: "${fake.baseURL}", model: "${model}", maxRetries: 0, timeoutSeconds: 120 }
`;
  const channel = (name: string, agentName: string) => `apiVersion: capstan.dev/v1alpha1
kind: AccessChannel
metadata: { name: ${name}, namespace: demo }
spec: { channelName: ${name}, agentRef: { name: ${agentName} }, qpm: 1000 }
status: { keyHash: "${hashKey(key)}" }
`;
  // One key per channel would need several keys; the long and the short stream differ by agent,
  // so two channels with two keys.
  return [agent("long", "slow:1000"), agent("short", "slow:200"), channel("long", "long")].join("---\n");
}

/** The gateway process on loopback ports, serving `dir`'s resources; returns once it is ready. */
async function startGateway(unreadyDelayMs: number) {
  const [port, internalPort] = [await freePort(), await freePort()];
  // Readiness answers on the internal port (the public one has no /readyz).
  const internalUrl = `http://127.0.0.1:${internalPort}`;
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("CAPSTAN_") && k !== "REDIS_URL" && k !== "KUBECONFIG"),
  );
  proc = startProcess("gateway", process.execPath, [MAIN], {
    ...clean,
    PORT: String(port),
    CAPSTAN_INTERNAL_PORT: String(internalPort),
    HOST: "127.0.0.1",
    OTEL_SDK_DISABLED: "true",
    CAPSTAN_RESOURCES_DIR: dir,
    // The fake provider listens on loopback, which the egress policy refuses unless listed.
    CAPSTAN_EGRESS_ALLOWED_HOSTS: "127.0.0.1",
    CAPSTAN_TERMINATION_GRACE_SECONDS: "12",
    CAPSTAN_SHUTDOWN_UNREADY_DELAY_MS: String(unreadyDelayMs),
  });
  const running = proc;
  await waitFor("gateway ready", async () => (await fetch(`${internalUrl}/readyz`)).status === 200, {
    timeoutMs: 60_000,
    proc: running,
  });
  return { running, port, url: `http://127.0.0.1:${port}`, internalUrl };
}

/** One HTTP/1.1 request on `socket` (kept alive); its answer's head, or why none came. */
function exchange(socket: Socket, path: string): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    const done = (result: string) => {
      socket.off("data", onData).off("close", onClose).off("error", onClose);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      text += chunk.toString("latin1");
      const end = text.indexOf("\r\n\r\n");
      const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? 0);
      if (end >= 0 && text.length >= end + 4 + length) done(text.slice(0, end));
    };
    const onClose = () => done(`no answer: the connection closed (${text.length} bytes read)`);
    if (socket.readyState !== "open") return done(`no answer: the connection was closed (${socket.readyState})`);
    socket.on("data", onData).once("close", onClose).once("error", onClose);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: gateway\r\n\r\n`);
  });
}

describe("SIGTERM", () => {
  it("fails readiness first, completes a stream that fits the drain window and ends a longer one with an error event", async () => {
    const longKey = generateKey("chat");
    const shortKey = generateKey("chat");
    writeFileSync(join(dir, "long.yaml"), resources(longKey));
    writeFileSync(
      join(dir, "short.yaml"),
      `apiVersion: capstan.dev/v1alpha1
kind: AccessChannel
metadata: { name: short, namespace: demo }
spec: { channelName: short, agentRef: { name: short }, qpm: 1000 }
status: { keyHash: "${hashKey(shortKey)}" }
`,
    );
    // Grace 12 s: readiness off at once, listener closed after 1 s, streams cut at 12 - 4 = 8 s.
    const { running, url, internalUrl } = await startGateway(1000);

    // 40 words at one a second: a 40 s stream.
    const words = Array.from({ length: 39 }, (_, i) => `w${i}`).join(" ");
    const long = await client(url, longKey).chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: words }],
      stream: true,
    });
    const longIter = long[Symbol.asyncIterator]();
    const firstChunk = await longIter.next();
    expect(firstChunk.done).toBe(false);
    // About 2 s of answer (10 words at 200 ms): ends well inside the drain window.
    const short = await client(url, shortKey).chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "one two three four five six seven eight nine" }],
      stream: true,
    });

    running.child.kill("SIGTERM");
    await waitFor("readiness off", async () => (await fetch(`${internalUrl}/readyz`)).status === 503, {
      timeoutMs: 5_000,
      proc: running,
    });
    const ready = (await (await fetch(`${internalUrl}/readyz`)).json()) as { reason: string };
    expect(ready.reason).toBe("shutting down");

    let shortText = "";
    let shortFinish: string | null | undefined;
    for await (const chunk of short) {
      shortText += chunk.choices[0]?.delta.content ?? "";
      shortFinish = chunk.choices[0]?.finish_reason ?? shortFinish;
    }
    expect(shortText).toBe("echo: one two three four five six seven eight nine");
    expect(shortFinish).toBe("stop");

    let longText = String(firstChunk.value?.choices[0]?.delta.content ?? "");
    const err = await (async () => {
      for (;;) {
        const step = await longIter.next();
        if (step.done) return undefined;
        longText += step.value.choices[0]?.delta.content ?? "";
      }
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe("server_shutting_down");
    expect((err as Error).message).toMatch(/shutting down.*incomplete/);
    expect(longText.length).toBeGreaterThan(0);
    expect(longText).not.toContain("w38");

    await new Promise<void>((resolve) => {
      if (running.child.exitCode !== null) resolve();
      else running.child.once("exit", () => resolve());
    });
    if (running.child.exitCode !== 0) console.log(running.output());
    expect(running.child.exitCode).toBe(0);
    expect(running.output()).toMatch(/drain window over/);
  });

  it("keeps a keep-alive connection made before SIGTERM usable until the listener closes, each answer closing its own", async () => {
    writeFileSync(join(dir, "long.yaml"), resources(generateKey("chat")));
    // The listener closes 3 s after SIGTERM: until then the ingress may still send here.
    const { running, port, internalUrl } = await startGateway(3000);
    const socket = connect(port, "127.0.0.1");
    await new Promise((r) => socket.once("connect", r));
    expect(await exchange(socket, "/nothing-here")).toMatch(/^HTTP\/1\.1 404[\s\S]*connection: keep-alive/i);

    running.child.kill("SIGTERM");
    await waitFor("readiness off", async () => (await fetch(`${internalUrl}/readyz`)).status === 503, {
      timeoutMs: 5_000,
      proc: running,
    });
    // Well past the moments a sweep of idle connections would have closed this one.
    await new Promise((r) => setTimeout(r, 1_000));
    const during = await exchange(socket, "/nothing-here");
    expect(during).toMatch(/^HTTP\/1\.1 404/);
    expect(during).toMatch(/connection: close/i);
    socket.destroy();
    await new Promise<void>((resolve) => {
      if (running.child.exitCode !== null) resolve();
      else running.child.once("exit", () => resolve());
    });
    expect(running.child.exitCode).toBe(0);
  });
});
