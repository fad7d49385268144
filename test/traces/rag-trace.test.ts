// One RAG chat request through the real processes (`node services/*/src/main.ts`, as deployed):
// the gateway (Redis limiter), search (the real embedding model, Qdrant from the ground) and a
// fake LLM provider speaking the OpenAI wire protocol, every process exporting to a real OpenTelemetry
// Collector through the standard OTEL_* variables. It must then hold ONE trace with the gateway's server
// span, the retrieval span and its HTTP client span, search's server span with its embed, vector
// (and Qdrant's HTTP calls) and rerank children, and the provider call, each under the right parent.
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateKey, hashKey } from "@capstan/shared";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../gateway/fake-openai.ts";
import { freePort } from "../ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../ground/process.ts";
import { listCollections, qdrantPrefix } from "../ground/qdrant.ts";
import {
  parentOf,
  spanTree,
  startTraceReceiver,
  type TraceReceiver,
  type TraceSpan,
  tagOf,
  traceWith,
} from "../ground/trace-receiver.ts";
import { INTERNAL_TOKEN } from "../search/helpers.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const NS = "traces";
const KB = "kb_handbook";
const dir = mkdtempSync(join(tmpdir(), "capstan-rag-trace-"));
const running: ManagedProcess[] = [];
let receiver: TraceReceiver;
let fake: FakeOpenAI;
let gatewayUrl: string;
let searchInternal: string;
const key = generateKey("chat");

/** The environment every process gets: OTEL_* to the trace receiver, nothing of the test runner's CAPSTAN_*. */
function env(service: Record<string, string>): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("CAPSTAN_") && !k.startsWith("OTEL_")),
  );
  return {
    ...clean,
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.otlpEndpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
    // Export within a fraction of a second instead of the default 5 s.
    OTEL_BSP_SCHEDULE_DELAY: "100",
    // Every trace recorded: the processes' default samples 1 % of new traces.
    OTEL_TRACES_SAMPLER: "parentbased_always_on",
    ...service,
  };
}

async function ok(url: string): Promise<boolean> {
  const res = await fetch(url);
  await res.arrayBuffer();
  return res.status === 200;
}

beforeAll(async () => {
  receiver = await startTraceReceiver();
  fake = await startFakeOpenAI();
  const resources = join(dir, "resources");
  mkdirSync(resources);
  writeFileSync(
    join(resources, "platform.yaml"),
    `apiVersion: capstan.dev/v1alpha1
kind: KnowledgeBase
metadata: {name: handbook, namespace: ${NS}}
spec: {knowledgeId: ${KB}}
---
apiVersion: capstan.dev/v1alpha1
kind: Agent
metadata: {name: helper, namespace: ${NS}}
spec:
  provider: {baseURL: "${fake.baseURL}", model: echo, maxRetries: 0}
  knowledge: {knowledgeIds: [${KB}], maxResults: 2, minSimilarity: 0.1}
---
apiVersion: capstan.dev/v1alpha1
kind: AccessChannel
metadata: {name: web, namespace: ${NS}}
spec: {channelName: web, agentRef: {name: helper}, qpm: 100}
status: {keyHash: "${hashKey(key)}"}
`,
  );
  const [searchPort, searchInternalPort, gatewayPort, gatewayInternalPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const search = startProcess("search", process.execPath, [join(root, "services/search/src/main.ts")], {
    ...env({
      PORT: String(searchPort),
      CAPSTAN_INTERNAL_PORT: String(searchInternalPort),
      CAPSTAN_RESOURCES_DIR: resources,
      CAPSTAN_INTERNAL_TOKEN: INTERNAL_TOKEN,
      QDRANT_URL: inject("qdrantUrl"),
      CAPSTAN_QDRANT_COLLECTION_PREFIX: qdrantPrefix("rag_trace"),
    }),
  });
  running.push(search);
  searchInternal = `http://127.0.0.1:${searchInternalPort}`;
  await waitFor("search ready", () => ok(`${searchInternal}/readyz`), { timeoutMs: 120_000, proc: search });
  const put = async (path: string, body: unknown) => {
    const res = await fetch(`${searchInternal}/internal/v1/namespaces/${NS}/knowledge-bases/${KB}${path}`, {
      method: "PUT",
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(res.status, await res.text()).toBe(200);
  };
  await put("", {});
  await put("/documents/rate-limits", {
    docsName: "Rate limits",
    text: "Each access channel has a rate limit in requests per minute. Requests over the limit get HTTP 429 with Retry-After.",
  });
  await put("/documents/keys", {
    docsName: "Keys",
    text: "Chat keys are stored in Kubernetes Secrets and shown once. Rotate search keys every ninety days.",
  });

  const gateway = startProcess("gateway", process.execPath, [join(root, "services/gateway/src/main.ts")], {
    ...env({
      PORT: String(gatewayPort),
      CAPSTAN_INTERNAL_PORT: String(gatewayInternalPort),
      CAPSTAN_RESOURCES_DIR: resources,
      // Retrieval with the internal token: search's internal port, the only one that accepts it.
      CAPSTAN_SEARCH_URL: searchInternal,
      // The fake provider listens on loopback, which the egress policy refuses unless listed.
      CAPSTAN_EGRESS_ALLOWED_HOSTS: "127.0.0.1",
      CAPSTAN_INTERNAL_TOKEN: INTERNAL_TOKEN,
      REDIS_URL: inject("redisUrl"),
    }),
  });
  running.push(gateway);
  gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  await waitFor("gateway ready", () => ok(`http://127.0.0.1:${gatewayInternalPort}/readyz`), {
    timeoutMs: 60_000,
    proc: gateway,
  });
}, 240_000);

afterAll(async () => {
  if (searchInternal) {
    await fetch(`${searchInternal}/internal/v1/namespaces/${NS}/knowledge-bases/${KB}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}` },
    }).catch(() => {});
  }
  await Promise.all(running.map((p) => p.stop()));
  // Search keeps one collection per embedding model and a registry: this file's, by prefix.
  const qdrant = inject("qdrantUrl");
  for (const c of await listCollections(qdrant)) {
    if (c.startsWith(qdrantPrefix("rag_trace"))) await fetch(`${qdrant}/collections/${c}`, { method: "DELETE" });
  }
  await fake?.close();
  await receiver?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("one trace per RAG chat request, across processes", () => {
  it("links gateway, retrieval, search (embed, vector, rerank) and the provider call in one trace", async () => {
    const traceId = randomBytes(16).toString("hex");
    const callerSpan = randomBytes(8).toString("hex");
    const res = await fetch(`${gatewayUrl}/api/v1/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        traceparent: `00-${traceId}-${callerSpan}-01`,
      },
      body: JSON.stringify({ model: "helper", messages: [{ role: "user", content: "What is the rate limit?" }] }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    await res.json();

    const t = await traceWith(receiver, traceId, [
      `retrieval ${KB}`,
      "search.embed",
      "search.vector",
      "search.rerank",
      "chat echo",
    ]);
    const service = (s: TraceSpan) => t.processes[s.processID]?.serviceName;
    const byId = new Map(t.spans.map((s) => [s.spanID, s]));
    const one = (name: string, svc: string) => {
      const found = t.spans.filter((s) => s.operationName === name && service(s) === svc);
      expect(found.length, `${svc}: ${name}\n${spanTree(t)}`).toBe(1);
      return found[0] as TraceSpan;
    };
    const server = (svc: string) =>
      t.spans.filter(
        (s) => service(s) === svc && tagOf(s, "span.kind") === "server" && s.operationName.startsWith("POST"),
      );

    // The gateway's HTTP server span is the caller's child.
    const [gatewayServer] = server("capstan-gateway");
    expect(gatewayServer, spanTree(t)).toBeDefined();
    expect(parentOf(gatewayServer as TraceSpan)).toBe(callerSpan);
    const isUnder = (s: TraceSpan, ancestor: TraceSpan): boolean => {
      for (let p = parentOf(s); p; p = byId.get(p) ? parentOf(byId.get(p) as TraceSpan) : undefined) {
        if (p === ancestor.spanID) return true;
      }
      return false;
    };

    // retrieval → its HTTP client span → search's server span.
    const retrieval = one(`retrieval ${KB}`, "capstan-gateway");
    expect(isUnder(retrieval, gatewayServer as TraceSpan), spanTree(t)).toBe(true);
    const [searchServer] = server("capstan-search");
    expect(searchServer, spanTree(t)).toBeDefined();
    const client = byId.get(parentOf(searchServer as TraceSpan) ?? "");
    expect(client && tagOf(client, "span.kind"), spanTree(t)).toBe("client");
    expect(client && service(client)).toBe("capstan-gateway");
    expect(client && parentOf(client)).toBe(retrieval.spanID);

    // search's stages under its server span; Qdrant's HTTP calls under the vector stage.
    for (const stage of ["search.embed", "search.vector", "search.rerank"]) {
      expect(isUnder(one(stage, "capstan-search"), searchServer as TraceSpan), `${stage}\n${spanTree(t)}`).toBe(true);
    }
    const vector = one("search.vector", "capstan-search");
    expect(
      t.spans.some((s) => parentOf(s) === vector.spanID && tagOf(s, "span.kind") === "client"),
      `Qdrant client span under search.vector\n${spanTree(t)}`,
    ).toBe(true);

    // The GenAI agent step (retrieval under it) and the provider call, whose HTTP client span
    // the provider saw.
    const agent = one("invoke_agent helper", "capstan-gateway");
    expect(isUnder(agent, gatewayServer as TraceSpan)).toBe(true);
    expect(parentOf(retrieval)).toBe(agent.spanID);
    expect(tagOf(agent, "gen_ai.operation.name")).toBe("invoke_agent");
    expect(tagOf(agent, "gen_ai.usage.output_tokens")).toEqual(expect.any(Number));
    expect(tagOf(retrieval, "gen_ai.operation.name")).toBe("retrieval");
    expect(tagOf(retrieval, "gen_ai.data_source.id")).toBe(KB);
    const provider = one("chat echo", "capstan-gateway");
    expect(parentOf(provider)).toBe(agent.spanID);
    expect(tagOf(provider, "gen_ai.request.model")).toBe("echo");
    const seen = String(fake.calls.at(-1)?.headers.traceparent ?? "").split("-");
    expect(seen[1]).toBe(traceId);
    expect(parentOf(byId.get(seen[2] ?? "") as TraceSpan)).toBe(provider.spanID);

    // The server span is named after the route and carries the channel and the limiter's decision;
    // the limiter's Redis command (ioredis instrumentation) is its child.
    expect((gatewayServer as TraceSpan).operationName).toBe("POST /api/v1/chat/completions");
    expect(tagOf(gatewayServer as TraceSpan, "http.route")).toBe("/api/v1/chat/completions");
    expect(tagOf(gatewayServer as TraceSpan, "capstan.limiter.backend")).toBe("redis");
    expect(tagOf(gatewayServer as TraceSpan, "capstan.channel")).toEqual(expect.any(String));
    expect(
      t.spans.some(
        (s) => parentOf(s) === (gatewayServer as TraceSpan).spanID && s.tags.some((x) => x.key.startsWith("db.")),
      ),
      `a Redis span under the server span\n${spanTree(t)}`,
    ).toBe(true);
    // Spans that carry information only: no per-hook or per-handler spans, one server span per
    // request in each process.
    expect(
      t.spans.filter((s) => /^(request|onRequest|onSend|onResponse|handler|preHandler)\b/.test(s.operationName)),
      spanTree(t),
    ).toEqual([]);
    expect(server("capstan-gateway")).toHaveLength(1);
    expect(server("capstan-search")).toHaveLength(1);
    console.log(`[rag trace]\n${spanTree(t)}`);
  });
});
