// The operator (`node operator/src/main.ts`, as deployed) exports each reconcile as a trace of its
// own to a real OpenTelemetry Collector: a root span "reconcile <Kind>" naming the object (kind, namespace, name),
// with the API server calls it made as its HTTP client children.
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import { freePort } from "../ground/ports.ts";
import { type ManagedProcess, startProcess, waitFor } from "../ground/process.ts";
import { spanTree, startTraceReceiver, type TraceReceiver, type TraceSpan } from "../ground/trace-receiver.ts";
import { CAP, create, whenCondition } from "../operator/helpers.ts";

const OPERATOR = fileURLToPath(new URL("../../operator/src/main.ts", import.meta.url));
const ns = `traces-${process.pid}-${Date.now().toString(36)}`;
let admin: TestKube;
let receiver: TraceReceiver;
let operator: ManagedProcess;

beforeAll(async () => {
  admin = harnessKubeClient();
  await installCrds(admin);
  await ensureNamespace(admin, ns);
  receiver = await startTraceReceiver();
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith("CAPSTAN_") && !k.startsWith("OTEL_") && k !== "KUBECONFIG" && k !== "REDIS_URL",
    ),
  );
  const health = await freePort();
  operator = startProcess("operator", process.execPath, [OPERATOR], {
    ...clean,
    KUBECONFIG: inject("kubeconfig"),
    CAPSTAN_NAMESPACE: ns,
    CAPSTAN_WATCH_NAMESPACE: ns,
    LEADER_ELECT: "false",
    HEALTH_PORT: String(health),
    METRICS_PORT: String(await freePort()),
    LOG_LEVEL: "warn",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.otlpEndpoint,
    OTEL_BSP_SCHEDULE_DELAY: "100",
    // Every trace recorded: the processes' default samples 1 % of new traces.
    OTEL_TRACES_SAMPLER: "parentbased_always_on",
  });
  await waitFor("operator ready", async () => (await fetch(`http://127.0.0.1:${health}/readyz`)).status === 200, {
    timeoutMs: 180_000,
    proc: operator,
  });
}, 240_000);

afterAll(async () => {
  await operator?.stop();
  await receiver?.stop();
  await admin?.json(`/api/v1/namespaces/${ns}`, { method: "DELETE" }).catch(() => {});
});

const tag = (s: TraceSpan, k: string) => s.tags.find((t) => t.key === k)?.value;

describe("operator reconciles as traces", () => {
  it("traces an AccessChannel's reconcile as its own root span with the API calls below it", async () => {
    await create(admin, {
      apiVersion: CAP,
      kind: "Agent",
      metadata: { name: "assistant", namespace: ns },
      spec: { provider: { baseURL: "https://llm.example/v1", model: "m" } },
    });
    await create(admin, {
      apiVersion: CAP,
      kind: "AccessChannel",
      metadata: { name: "web", namespace: ns },
      spec: { channelName: "web", agentRef: { name: "assistant" } },
    });
    await whenCondition(admin, "AccessChannel", ns, "web", "Ready", "True");

    // The reconcile that issued the key: a root span naming the object, with the Secret's
    // creation among its HTTP client children (undici instrumentation of the kube client).
    let found: { root: TraceSpan; calls: TraceSpan[]; tree: string } | undefined;
    await waitFor(
      "a reconcile AccessChannel trace that created the key's Secret",
      async () => {
        for (const t of await receiver.traces("capstan-operator", "reconcile AccessChannel")) {
          const root = t.spans.find(
            (s) =>
              s.operationName === "reconcile AccessChannel" &&
              tag(s, "capstan.resource.name") === "web" &&
              tag(s, "k8s.namespace.name") === ns,
          );
          if (!root) continue;
          const calls = t.spans.filter(
            (s) => s.references.some((r) => r.spanID === root.spanID) && tag(s, "span.kind") === "client",
          );
          if (
            calls.some((c) => tag(c, "http.request.method") === "POST" && /\/secrets/.test(String(tag(c, "url.full"))))
          ) {
            found = { root, calls, tree: spanTree(t) };
            return true;
          }
        }
        return false;
      },
      { timeoutMs: 30_000 },
    );
    const { root, calls, tree } = found as NonNullable<typeof found>;
    expect(
      root.references.filter((r) => r.refType === "CHILD_OF"),
      tree,
    ).toEqual([]);
    expect(tag(root, "capstan.resource.kind")).toBe("AccessChannel");
    for (const c of calls) expect(String(tag(c, "url.full"))).toContain("/namespaces/");
    console.log(`[reconcile trace]\n${tree}`);
  });
});
