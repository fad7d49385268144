// The gateway's GenAI spans as a collector receives them: the gateway process (`node
// services/gateway/src/main.ts`, as deployed) with an LLM agent on a fake provider speaking the
// OpenAI wire protocol, exporting over OTLP to the test ground's trace receiver (a real
// OpenTelemetry Collector). It must hold, by the GenAI semantic conventions: the agent step as an
// INTERNAL `invoke_agent {agent}` span and the provider call as a CLIENT `chat {model}` span under
// it, each with its request and response attributes (max_tokens, response id, finish reasons,
// usage; a stream's time to its first chunk; error.type on failure), and never the server metric
// gen_ai.server.time_to_first_token as an attribute. An unsampled request exports nothing. Every
// span carries the pod's k8s.* resource attributes and service.instance.id from the downward API's
// variables, and OTEL_SERVICE_NAME names the service.
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateKey, hashKey } from "@capstan/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../gateway/fake-openai.ts";
import { freePort } from "../ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../ground/process.ts";
import {
  parentOf,
  spanTree,
  startTraceReceiver,
  type Trace,
  type TraceReceiver,
  type TraceSpan,
  tagOf,
  traceWith,
} from "../ground/trace-receiver.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const NS = "genai";
const SERVICE = "capstan-gateway-genai";
const POD = {
  K8S_NAMESPACE_NAME: "capstan-system",
  K8S_POD_NAME: "capstan-gateway-5d8c7b9f4-x2kqp",
  K8S_POD_UID: "6f0b3c1e-2a4d-4c8e-9f10-2b3c4d5e6f70",
  K8S_NODE_NAME: "node-a",
  K8S_DEPLOYMENT_NAME: "capstan-gateway",
  K8S_CONTAINER_NAME: "gateway",
};
const dir = mkdtempSync(join(tmpdir(), "capstan-genai-trace-"));
let receiver: TraceReceiver;
let fake: FakeOpenAI;
let gateway: ManagedProcess;
let gatewayUrl: string;
const key = generateKey("chat");
const failingKey = generateKey("chat");

beforeAll(async () => {
  receiver = await startTraceReceiver();
  fake = await startFakeOpenAI();
  const resources = join(dir, "resources");
  mkdirSync(resources);
  const channel = (name: string, agent: string, k: string) => `---
apiVersion: capstan.dev/v1alpha1
kind: AccessChannel
metadata: {name: ${name}, namespace: ${NS}}
spec: {channelName: ${name}, agentRef: {name: ${agent}}, qpm: 1000}
status: {keyHash: "${hashKey(k)}"}
`;
  writeFileSync(
    join(resources, "platform.yaml"),
    `apiVersion: capstan.dev/v1alpha1
kind: Agent
metadata: {name: writer, namespace: ${NS}}
spec:
  description: Writes short answers
  provider: {baseURL: "${fake.baseURL}", model: echo, maxRetries: 0}
---
apiVersion: capstan.dev/v1alpha1
kind: Agent
metadata: {name: failing, namespace: ${NS}}
spec:
  provider: {baseURL: "${fake.baseURL}", model: "status:500", maxRetries: 0}
${channel("web", "writer", key)}${channel("broken", "failing", failingKey)}`,
  );
  const [port, internalPort] = [await freePort(), await freePort()];
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith("CAPSTAN_") && !k.startsWith("OTEL_") && !k.startsWith("K8S_") && k !== "REDIS_URL",
    ),
  );
  gateway = startProcess("gateway", process.execPath, [join(root, "services/gateway/src/main.ts")], {
    ...clean,
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    PORT: String(port),
    CAPSTAN_INTERNAL_PORT: String(internalPort),
    CAPSTAN_RESOURCES_DIR: resources,
    CAPSTAN_EGRESS_ALLOWED_HOSTS: "127.0.0.1",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.otlpEndpoint,
    OTEL_BSP_SCHEDULE_DELAY: "100",
    // Every new trace recorded; a caller's "not sampled" is kept (parent-based).
    OTEL_TRACES_SAMPLER: "parentbased_always_on",
    OTEL_SERVICE_NAME: SERVICE,
    ...POD,
  });
  gatewayUrl = `http://127.0.0.1:${port}`;
  await waitFor("gateway ready", async () => (await fetch(`http://127.0.0.1:${internalPort}/readyz`)).ok, {
    timeoutMs: 60_000,
    proc: gateway,
  });
}, 120_000);

afterAll(async () => {
  await gateway?.stop();
  await fake?.close();
  await receiver?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** One chat request in a trace of its own; `sampled` is the caller's flag. */
async function chat(k: string, body: Record<string, unknown>, sampled = true) {
  const traceId = randomBytes(16).toString("hex");
  const res = await fetch(`${gatewayUrl}/api/v1/chat/completions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${k}`,
      "content-type": "application/json",
      traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-${sampled ? "01" : "00"}`,
    },
    body: JSON.stringify({ model: "any", messages: [{ role: "user", content: "Say hello" }], ...body }),
  });
  return { traceId, status: res.status, text: await res.text() };
}

function one(t: Trace, name: string): TraceSpan {
  const found = t.spans.filter((s) => s.operationName === name);
  expect(found.length, `${name}\n${spanTree(t)}`).toBe(1);
  return found[0] as TraceSpan;
}

describe("GenAI spans of the gateway, read from a collector", () => {
  it("records the agent step and the provider call with their request and response attributes", async () => {
    const { traceId, status, text } = await chat(key, { max_tokens: 64, temperature: 0.3 });
    expect(status, text).toBe(200);
    const answer = JSON.parse(text) as { id: string; usage: { prompt_tokens: number; completion_tokens: number } };
    const t = await traceWith(receiver, traceId, ["POST /api/v1/chat/completions", "invoke_agent writer", "chat echo"]);
    const server = one(t, "POST /api/v1/chat/completions");
    const agent = one(t, "invoke_agent writer");
    const provider = one(t, "chat echo");
    expect(parentOf(agent)).toBe(server.spanID);
    expect(parentOf(provider)).toBe(agent.spanID);
    expect(Object.fromEntries(agent.tags.map((x) => [x.key, x.value]))).toMatchObject({
      "span.kind": "internal",
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.provider.name": "openai",
      "gen_ai.agent.name": "writer",
      "gen_ai.agent.id": `${NS}/writer`,
      "gen_ai.agent.description": "Writes short answers",
      "gen_ai.request.model": "echo",
      "gen_ai.request.max_tokens": 64,
      "gen_ai.request.temperature": 0.3,
      "gen_ai.response.id": answer.id,
      "gen_ai.response.finish_reasons": ["stop"],
      "gen_ai.usage.input_tokens": answer.usage.prompt_tokens,
      "gen_ai.usage.output_tokens": answer.usage.completion_tokens,
    });
    const call = fake.calls.at(-1);
    expect(Object.fromEntries(provider.tags.map((x) => [x.key, x.value]))).toMatchObject({
      "span.kind": "client",
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "echo",
      "gen_ai.request.max_tokens": 64,
      "gen_ai.request.temperature": 0.3,
      "gen_ai.request.stream": false,
      "server.address": "127.0.0.1",
      "server.port": Number(new URL(fake.url).port),
      "gen_ai.response.id": expect.stringMatching(/^chatcmpl-fake\d+$/),
      "gen_ai.response.model": call?.body.model,
      "gen_ai.response.finish_reasons": ["stop"],
      "gen_ai.usage.input_tokens": answer.usage.prompt_tokens,
      "gen_ai.usage.output_tokens": answer.usage.completion_tokens,
    });
    // The time to the first token is the gen_ai.server.time_to_first_token metric, not an attribute.
    expect(t.spans.flatMap((s) => s.tags.filter((x) => x.key.startsWith("gen_ai.server.")))).toEqual([]);
  });

  it("notes a stream's time to its first chunk, its finish reasons and usage", async () => {
    const { traceId, status, text } = await chat(key, { stream: true, stream_options: { include_usage: true } });
    expect(status, text).toBe(200);
    const t = await traceWith(receiver, traceId, ["invoke_agent writer", "chat echo"]);
    const provider = one(t, "chat echo");
    expect(tagOf(provider, "gen_ai.request.stream")).toBe(true);
    expect(tagOf(provider, "gen_ai.response.time_to_first_chunk")).toBeGreaterThan(0);
    expect(tagOf(provider, "gen_ai.response.time_to_first_chunk")).toBeLessThan(provider.duration / 1e6);
    expect(tagOf(provider, "gen_ai.response.finish_reasons")).toEqual(["stop"]);
    expect(tagOf(provider, "gen_ai.usage.output_tokens")).toEqual(expect.any(Number));
    const agent = one(t, "invoke_agent writer");
    expect(tagOf(agent, "gen_ai.request.stream")).toBe(true);
    expect(tagOf(agent, "gen_ai.response.finish_reasons")).toEqual(["stop"]);
    expect(tagOf(agent, "gen_ai.usage.output_tokens")).toEqual(expect.any(Number));
  });

  it("gives a failed provider call and its agent step the error's type", async () => {
    const { traceId, status } = await chat(failingKey, {});
    expect(status).toBe(502);
    const t = await traceWith(receiver, traceId, ["invoke_agent failing", "chat status:500"]);
    expect(tagOf(one(t, "chat status:500"), "error.type")).toBe("upstream_error");
    expect(tagOf(one(t, "invoke_agent failing"), "error.type")).toBe("upstream_error");
  });

  it("exports nothing for a request its caller did not sample", async () => {
    const unsampled = await chat(key, {}, false);
    expect(unsampled.status).toBe(200);
    // Spans leave in the order they end: once a later request's trace is in, an earlier one's
    // spans would be too.
    const later = await chat(key, {});
    await traceWith(receiver, later.traceId, ["invoke_agent writer"]);
    expect(await receiver.trace(unsampled.traceId)).toBeUndefined();
  });

  it("carries the pod's k8s.* attributes and service.instance.id on every span", async () => {
    const { traceId } = await chat(key, {});
    const t = await traceWith(receiver, traceId, ["invoke_agent writer"]);
    const processes = Object.values(t.processes);
    expect(processes.map((p) => p.serviceName)).toEqual([SERVICE]);
    const resource = Object.fromEntries((processes[0]?.tags ?? []).map((x) => [x.key, x.value]));
    expect(resource).toMatchObject({
      "k8s.namespace.name": POD.K8S_NAMESPACE_NAME,
      "k8s.pod.name": POD.K8S_POD_NAME,
      "k8s.pod.uid": POD.K8S_POD_UID,
      "k8s.node.name": POD.K8S_NODE_NAME,
      "k8s.deployment.name": POD.K8S_DEPLOYMENT_NAME,
      "k8s.container.name": POD.K8S_CONTAINER_NAME,
      "service.instance.id": `${POD.K8S_NAMESPACE_NAME}.${POD.K8S_POD_NAME}.${POD.K8S_CONTAINER_NAME}`,
    });
  });
});
