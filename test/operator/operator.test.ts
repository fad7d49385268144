// The operator against the real test API server: every object of examples/ becomes Ready, keys land
// in owner-referenced Secrets, the data plane is applied as specified (conditions, rotation and
// deletion: operator-lifecycle.test.ts; steady state: steady-state.test.ts).
import { createHash } from "node:crypto";
import { hasValidChecksum } from "@capstan/shared";
import { beforeAll, describe, expect, it } from "vitest";
import { rawExamples, type TestKube } from "../ground/kube-client.ts";
import { CAP, condition, eventually, get, type Obj, patch, whenCondition } from "./helpers.ts";
import { decode, operatorWithExamples } from "./operator-fixture.ts";

const fixture = operatorWithExamples("op");
const { ns, search } = fixture;
let client: TestKube;
beforeAll(() => {
  client = fixture.client;
});

describe("examples/", () => {
  it("every example becomes Ready", async () => {
    for (const raw of rawExamples()) {
      if (raw.kind === "Namespace") continue;
      const o = await whenCondition(client, raw.kind, ns, raw.metadata.name, "Ready", "True");
      expect(o.status?.observedGeneration).toBe(o.metadata.generation);
    }
  });

  it("the AccessChannel's key is in an owner-referenced Secret and only its hash is in status", async () => {
    const ch = await whenCondition(client, "AccessChannel", ns, "website-chat", "Ready", "True");
    const status = ch.status as Record<string, string>;
    expect(status.secretName).toBe("website-chat-chat-key");
    const secret = (await get(client, "v1", "Secret", ns, status.secretName as string)) as Obj;
    const key = decode(secret.data?.key);
    expect(key).toMatch(/^cap_chat_/);
    expect(hasValidChecksum(key)).toBe(true);
    expect(status.keyHash).toBe(`sha256:${createHash("sha256").update(key).digest("hex")}`);
    expect(status.keyPrefix).toBe(`${key.slice(0, 13)}…`);
    expect(status.expiresAt).toBe("2027-12-31T23:59:59Z");
    expect(status.endpoint).toBe(`http://capstan-gateway.${ns}.svc:80/api/v1`);
    expect(JSON.stringify(ch.status)).not.toContain(key);
    expect(secret.metadata.ownerReferences).toEqual([
      {
        apiVersion: CAP,
        kind: "AccessChannel",
        name: "website-chat",
        uid: ch.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
  });

  it("the SearchKey has its key, validity and endpoint", async () => {
    const sk = await whenCondition(client, "SearchKey", ns, "docs-search-backend", "Ready", "True");
    const st = sk.status as Record<string, string>;
    const secret = (await get(client, "v1", "Secret", ns, st.secretName as string)) as Obj;
    expect(decode(secret.data?.key)).toMatch(/^cap_srch_/);
    expect(secret.metadata.ownerReferences?.[0]?.uid).toBe(sk.metadata.uid);
    expect(st.validFrom).toBe("2026-01-01T00:00:00Z");
    expect(st.expiresAt).toBe("2027-12-31T00:00:00Z");
    expect(st.endpoint).toBe(`http://capstan-search.${ns}.svc:80/v1/rag/search`);
    expect(st.rotatedAt).toBeDefined();
    expect(condition(sk, "ScopeResolved")?.status).toBe("True");
  });

  it("the Agent is extractive with its knowledge base resolved", async () => {
    const agent = await whenCondition(client, "Agent", ns, "support-assistant", "Ready", "True");
    expect(agent.status?.mode).toBe("extractive");
    expect(condition(agent, "KnowledgeResolved")?.reason).toBe("KnowledgeBasesFound");
  });

  it("the KnowledgeBase ingests its inline sources; the unreachable page is counted as a failure", async () => {
    const kb = await eventually("KnowledgeBase counts", async () => {
      const o = await get(client, CAP, "KnowledgeBase", ns, "product-docs");
      return o?.status?.lastRefreshTime ? o : undefined;
    });
    expect(kb.metadata.finalizers).toContain("capstan.dev/knowledge-base");
    expect(kb.status).toMatchObject({
      knowledgeId: "kb_product_docs",
      collection: `capstan_${ns}.kb_product_docs`,
      documents: 10,
      failures: 1,
      progress: "10/11 sources",
    });
    expect(kb.status?.chunks).toBeGreaterThanOrEqual(10);
    expect(condition(kb, "Ready")).toMatchObject({ status: "True", reason: "PartiallyIngested" });
    expect(condition(kb, "Ingested")?.status).toBe("False");
    // The failed source is tried again on a backoff that starts here, not in a day.
    expect(kb.metadata.annotations?.["capstan.dev/failing-since"]).toBeDefined();
    const stored = search.kbs.get(`${ns}.kb_product_docs`);
    const example = rawExamples().find((r) => r.kind === "KnowledgeBase") as Obj;
    const sources = (example.spec?.sources ?? []) as { name: string; text?: string }[];
    const inline = sources.filter((x) => x.text !== undefined);
    expect(inline.length).toBe(10);
    expect([...(stored?.docs.values() ?? [])].map((d) => d.docsName).sort()).toEqual(inline.map((x) => x.name).sort());
    expect(stored?.settings).toEqual({
      embedding: { provider: "local", model: "all-MiniLM-L6-v2" },
      chunking: { size: 800, overlap: 100 },
    });
  });

  it("the Scraper gets a Deployment (scraper + rendering service) and Service with the reference env", async () => {
    const scraper = await whenCondition(client, "Scraper", ns, "web", "Ready", "True");
    const dep = (await get(client, "apps/v1", "Deployment", ns, "web")) as Obj;
    const svc = (await get(client, "v1", "Service", ns, "web")) as Obj;
    expect(dep.metadata.ownerReferences?.[0]).toMatchObject({
      kind: "Scraper",
      name: "web",
      uid: scraper.metadata.uid,
      controller: true,
    });
    expect(svc.metadata.ownerReferences?.[0]?.uid).toBe(scraper.metadata.uid);
    const spec = dep.spec as {
      replicas: number;
      template: {
        metadata: { annotations: Record<string, string> };
        spec: {
          containers: {
            name: string;
            env: { name: string; value?: string; valueFrom?: unknown }[];
            ports: { containerPort: number }[];
            readinessProbe: { httpGet: { path: string; port: string | number } };
          }[];
        };
      };
    };
    expect(spec.replicas).toBe(2);
    const [api, render] = spec.template.spec.containers;
    expect(api?.name).toBe("scraper");
    expect(render?.name).toBe("render");
    expect(render?.ports[0]?.containerPort).toBe(3000);
    expect(render?.readinessProbe.httpGet.path).toBe("/scrape");
    const env = Object.fromEntries((api?.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));
    expect(env).toMatchObject({
      PORT: "3002",
      INTERNAL_PORT: "3002",
      ADMIN_PORT: "3003",
      LOGGING_LEVEL: "info",
      LLM_BASE_URL: "https://api.openai.com/v1",
      MODEL_NAME: "gpt-4o-mini",
      MODEL_EMBEDDING_NAME: "text-embedding-3-small",
      SEARCH_ENGINES: "google,bing,duckduckgo",
      SEARCH_CATEGORIES: "general",
      BLOCK_MEDIA: "true",
      MAX_CONCURRENT_REQUESTS: "10",
      REQUEST_TIMEOUT: "30000",
      WORKER_CONCURRENCY: "5",
      TASK_TIMEOUT: "60000",
      AUTH_ENABLED: "true",
      RENDER_PORT: "3000",
      RENDER_URL: "http://127.0.0.1:3000",
      API_KEY: { secretKeyRef: { name: "web-scraper-key", key: "key" } },
    });
    const keySecret = (await get(client, "v1", "Secret", ns, "web-scraper-key")) as Obj;
    expect(decode(keySecret.data?.key)).toMatch(/^cap_scr_/);
    expect(scraper.status).toMatchObject({ endpoint: `http://web.${ns}.svc:3002`, replicas: 2, readyReplicas: 0 });
    expect(scraper.status?.configHash).toBe(spec.template.metadata.annotations["capstan.dev/config-hash"]);
    expect((svc.spec as { ports: unknown[] }).ports).toEqual([
      { name: "http", port: 3002, targetPort: "http", protocol: "TCP" },
      { name: "admin", port: 3003, targetPort: "admin", protocol: "TCP" },
    ]);
    // Metrics and health on the admin port: the probes go there, the API's port keeps none.
    expect(api?.readinessProbe.httpGet).toMatchObject({ path: "/readyz", port: "admin" });

    // A spec change rolls the pods: a new config hash on the pod template.
    await patch(client, { apiVersion: CAP, kind: "Scraper", ns, name: "web" }, { spec: { logLevel: "debug" } });
    const changed = await eventually("new config hash", async () => {
      const d = (await get(client, "apps/v1", "Deployment", ns, "web")) as Obj;
      const h = (d.spec as typeof spec).template.metadata.annotations["capstan.dev/config-hash"];
      return h !== scraper.status?.configHash ? h : undefined;
    });
    await eventually(
      "status config hash",
      async () => (await get(client, CAP, "Scraper", ns, "web"))?.status?.configHash === changed,
    );
  });

  it("the gateway and search Deployments and Services are applied as the config says", async () => {
    const gw = await eventually("gateway", () => get(client, "apps/v1", "Deployment", ns, "capstan-gateway"));
    const se = await eventually("search", () => get(client, "apps/v1", "Deployment", ns, "capstan-search"));
    type Pod = {
      replicas: number;
      template: {
        spec: {
          serviceAccountName: string;
          terminationGracePeriodSeconds: number;
          securityContext: Record<string, unknown>;
          containers: {
            image: string;
            env: { name: string; value?: string; valueFrom?: unknown }[];
            securityContext: Record<string, unknown>;
            ports: { containerPort: number }[];
          }[];
        };
      };
    };
    const g = gw.spec as Pod;
    const s = se.spec as Pod;
    expect(g.replicas).toBe(2);
    expect(g.template.spec.serviceAccountName).toBe("capstan-data-plane");
    expect(g.template.spec.securityContext).toMatchObject({ runAsNonRoot: true });
    expect(g.template.spec.containers[0]?.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
    });
    expect(g.template.spec.containers[0]?.image).toBe("ghcr.io/capstan-dev/gateway:0.3.0");
    expect(g.template.spec.containers[0]?.ports[0]?.containerPort).toBe(8080);
    const genv = Object.fromEntries(
      (g.template.spec.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]),
    );
    expect(genv).toEqual({
      PORT: "8080",
      CAPSTAN_INTERNAL_PORT: "8090",
      REDIS_URL: "redis://redis.example:6379",
      CAPSTAN_NAMESPACE: ns,
      CAPSTAN_SEARCH_URL: `http://capstan-search.${ns}.svc:8091`,
      CAPSTAN_INTERNAL_TOKEN: { secretKeyRef: { name: "capstan-internal-token", key: "token" } },
      CAPSTAN_KEY_VERIFIER: { secretKeyRef: { name: "capstan-key-verifier", key: "key" } },
      CAPSTAN_SECRETS_DIR: "/var/run/capstan/secrets",
      CAPSTAN_LIMITER_REPLICAS: "2",
      CAPSTAN_TERMINATION_GRACE_SECONDS: String(g.template.spec.terminationGracePeriodSeconds),
      // The pod's identity from the downward API, for the traces' k8s.* resource attributes.
      K8S_NAMESPACE_NAME: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } },
      K8S_POD_NAME: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.name" } },
      K8S_POD_UID: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.uid" } },
      K8S_NODE_NAME: { fieldRef: { apiVersion: "v1", fieldPath: "spec.nodeName" } },
      K8S_DEPLOYMENT_NAME: "capstan-gateway",
      K8S_CONTAINER_NAME: "gateway",
    });
    expect(s.replicas).toBe(1);
    const senv = Object.fromEntries(
      (s.template.spec.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]),
    );
    expect(senv).toMatchObject({
      PORT: "8081",
      CAPSTAN_INTERNAL_PORT: "8091",
      REDIS_URL: "redis://redis.example:6379",
      QDRANT_URL: "http://qdrant.example:6333",
      CAPSTAN_DATA_DIR: "/var/lib/capstan",
      CAPSTAN_NAMESPACE: ns,
    });
    const http = { name: "http", port: 80, targetPort: "http", protocol: "TCP" };
    const ports = async (name: string) => ((await get(client, "v1", "Service", ns, name)) as Obj).spec?.ports;
    // The internal ports (metrics, health; search's documents API) keep their numbers on the Services.
    expect(await ports("capstan-gateway")).toEqual([
      http,
      { name: "internal", port: 8090, targetPort: "internal", protocol: "TCP" },
    ]);
    expect(await ports("capstan-search")).toEqual([
      http,
      { name: "internal", port: 8091, targetPort: "internal", protocol: "TCP" },
    ]);
    const token = (await get(client, "v1", "Secret", ns, "capstan-internal-token")) as Obj;
    expect(decode(token.data?.token).length).toBeGreaterThanOrEqual(43);
  });
});
