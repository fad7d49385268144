// The world the hostile-tenant suite attacks, made the way tenants make theirs: each tenant's editor
// (impersonated) writes its own Agents, channels, knowledge bases and keys; the administrator writes
// the Secrets and one Agent naming a Secret the editor may not read. Both tenants use the same
// knowledge id (kb_shared) with different texts, so a leak across namespaces shows as the other
// tenant's sentence in an answer.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestKube } from "../../ground/kube-client.ts";
import { CR, GUARDED_SECRET, ready, TEAM_SECRET, TENANT_A, TENANT_B, type Tenant, tenant } from "./hostile.ts";
import { apply, e2eKube, eventually, get, type Obj } from "./kube.ts";
import { ensurePlatform, keyOf } from "./platform.ts";
import { type Prober, startProber } from "./prober.ts";

export const FACT_A = "The tenant A vault combination is amber forty one.";
export const FACT_A_ONLY = "Tenant A keeps its payroll ledger in the granite archive.";
export const FACT_B = "The tenant B harbour combination is cobalt seventy seven.";

export interface World {
  a: Tenant;
  b: Tenant;
  /** A pod in tenant-a: the listener alice points an Agent at. */
  proberA: Prober;
  /** A pod in tenant-b: where bob tries the platform's internals from. */
  proberB: Prober;
  keys: {
    /** tenant-a's chat key (channel chat-a, extractive agent). */
    chatA: string;
    /** tenant-a's channel whose Agent aims at proberA. */
    rogueChat: string;
    /** tenant-a's channel whose Agent aims at the cloud metadata address. */
    metadataChat: string;
    /** tenant-a's channel whose Agent aims at the release's Redis Service. */
    redisChat: string;
    /** tenant-a's search key allowed only from 203.0.113.0/24 (a forged X-Forwarded-For's target). */
    officeOnly: string;
    /** tenant-b's search key (read and write) over kb_shared, from 127.0.0.1 (the ingress's client here). */
    searchB: string;
  };
}

const res = (kind: string, name: string, ns: string, spec: Record<string, unknown>): Obj => ({
  apiVersion: CR,
  kind,
  metadata: { name, namespace: ns },
  spec,
});

const knowledgeBase = (name: string, ns: string, knowledgeId: string, text: string) =>
  res("KnowledgeBase", name, ns, {
    knowledgeId,
    embedding: { provider: "local", model: "all-MiniLM-L6-v2" },
    sources: [{ name: `${name} facts`, text }],
  });

/** An Agent with a provider at `baseURL`, or (without one) extractive over kb_shared. */
const agent = (name: string, ns: string, baseURL?: string) =>
  res("Agent", name, ns, {
    description: `hostile-tenant suite: ${name}`,
    ...(baseURL
      ? { provider: { baseURL, model: "m", apiKeySecretRef: { name: TEAM_SECRET, key: "value" } } }
      : { knowledge: { knowledgeIds: ["kb_shared"] } }),
  });

const channel = (name: string, ns: string, agentName: string) =>
  res("AccessChannel", name, ns, { channelName: name, agentRef: { name: agentName }, qpm: 1000 });

/** A KnowledgeBase Ready with at least one chunk searchable. */
async function ingested(kube: TestKube, name: string, ns: string): Promise<void> {
  await eventually(`KnowledgeBase ${ns}/${name} ingested`, async () => {
    const kb = await get(kube, "KnowledgeBase", CR, name, ns);
    return (kb?.status?.chunks as number) > 0 ? kb : undefined;
  });
  await ready(kube, "KnowledgeBase", name, ns);
}

export async function makeWorld(admin: TestKube, image: string): Promise<World> {
  const a = await tenant(admin, TENANT_A, "alice");
  const b = await tenant(admin, TENANT_B, "bob");
  const [proberA, proberB] = await Promise.all([
    startProber(admin, TENANT_A, "prober", image),
    startProber(admin, TENANT_B, "prober", image),
  ]);

  // The administrator's Agent naming a Secret alice may not read (written before or despite the policy).
  await apply(
    admin,
    res("Agent", "vault-agent", TENANT_A, {
      provider: {
        baseURL: "https://llm.example/v1",
        model: "m",
        apiKeySecretRef: { name: GUARDED_SECRET, key: "value" },
      },
    }),
  );

  // tenant-a, written by alice.
  for (const o of [
    knowledgeBase("kb-a", TENANT_A, "kb_shared", FACT_A),
    knowledgeBase("kb-a-only", TENANT_A, "kb_only_a", FACT_A_ONLY),
    agent("helper", TENANT_A),
    agent("rogue", TENANT_A, `http://${proberA.ip}:8080/v1`),
    agent("metadata", TENANT_A, "http://169.254.169.254/latest/v1"),
    agent("redis", TENANT_A, "http://capstan-redis.capstan-system.svc.cluster.local:6379/v1"),
    channel("chat-a", TENANT_A, "helper"),
    channel("rogue-chat", TENANT_A, "rogue"),
    channel("metadata-chat", TENANT_A, "metadata"),
    channel("redis-chat", TENANT_A, "redis"),
    res("SearchKey", "office-only", TENANT_A, {
      keyName: "office only",
      knowledgeIds: ["kb_shared"],
      allowedCIDRs: ["203.0.113.0/24"],
    }),
    res("SearchKey", "supplied", TENANT_A, {
      keyName: "alice's own key",
      knowledgeIds: ["kb_shared"],
      keySecretRef: { name: TEAM_SECRET, key: "value" },
    }),
  ])
    await apply(a.editor, o);

  // tenant-b, written by bob.
  for (const o of [
    knowledgeBase("kb-b", TENANT_B, "kb_shared", FACT_B),
    res("SearchKey", "search-b", TENANT_B, {
      keyName: "tenant b",
      knowledgeIds: ["kb_shared"],
      permissions: ["read", "write"],
      allowedCIDRs: ["127.0.0.1"],
    }),
    res("SearchKey", "peek", TENANT_B, { keyName: "peek at a's id", knowledgeIds: ["kb_only_a"] }),
  ])
    await apply(b.editor, o);

  await Promise.all([
    ingested(admin, "kb-a", TENANT_A),
    ingested(admin, "kb-a-only", TENANT_A),
    ingested(admin, "kb-b", TENANT_B),
  ]);
  for (const name of ["chat-a", "rogue-chat", "metadata-chat", "redis-chat"])
    await ready(admin, "AccessChannel", name, TENANT_A);
  await ready(admin, "SearchKey", "search-b", TENANT_B);
  await ready(admin, "SearchKey", "office-only", TENANT_A);
  return {
    a,
    b,
    proberA,
    proberB,
    keys: {
      chatA: await keyOf(admin, "AccessChannel", "chat-a", TENANT_A),
      rogueChat: await keyOf(admin, "AccessChannel", "rogue-chat", TENANT_A),
      metadataChat: await keyOf(admin, "AccessChannel", "metadata-chat", TENANT_A),
      redisChat: await keyOf(admin, "AccessChannel", "redis-chat", TENANT_A),
      officeOnly: await keyOf(admin, "SearchKey", "office-only", TENANT_A),
      searchB: await keyOf(admin, "SearchKey", "search-b", TENANT_B),
    },
  };
}

export interface Stage {
  kube: TestKube;
  /** A temporary folder for helm's files; removed by the caller. */
  home: string;
  /** The CA the ingress's certificate is signed with. */
  ca: string;
  w: World;
}

/**
 * Metrics admitted from a monitoring namespace's Prometheus only, as an install with monitoring
 * sets `networkPolicy.metricsFrom` (docs/install.md); with the default [] every pod may read the
 * metrics ports, which carry no secrets (docs/security.md).
 */
export const HARDENED = [
  "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=capstan-monitoring",
  "networkPolicy.metricsFrom[0].podSelector.matchLabels.app\\.kubernetes\\.io/name=prometheus",
];

/** The platform installed by the chart's defaults and HARDENED (ensurePlatform), then this world on it. */
export async function stage(): Promise<Stage> {
  const kube = e2eKube();
  const home = mkdtempSync(join(tmpdir(), "capstan-e2e-hostile-"));
  const installed = await ensurePlatform(kube, home, HARDENED);
  const image = installed.images.operator;
  if (!image) throw new Error("no operator image in tags.env (it carries Node for the probers)");
  return { kube, home, ca: installed.tls.ca, w: await makeWorld(kube, image) };
}
