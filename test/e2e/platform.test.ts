// Capstan as a platform team and its users meet it, on a real node: `helm install` of the chart
// this repository released to the node's registry (oci://), its images pulled by digest,
// examples/ applied, every workload Ready by its real readiness probe; then the official OpenAI SDK and a search client through the ingress
// over HTTPS, a scrape through the scraper's Service, a KnowledgeBase built from a page served in
// the cluster, and the pods' users and root filesystems read back from the running processes.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { Agent, fetch } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestKube } from "../ground/kube-client.ts";
import {
  apply,
  condition,
  deploymentReady,
  e2eKube,
  eventually,
  get,
  list,
  mergePatch,
  secretValue,
} from "./support/kube.ts";
import { DEMO_NS, ensurePlatform, ingressBase, ingressDispatcher, keyOf, SYSTEM_NS } from "./support/platform.ts";
import { PULL_SECRET, release } from "./support/release.ts";
import { serviceRouted } from "./support/service-routing.ts";
import {
  channel,
  mapsLibrary,
  nodeDaemonsRssKiB,
  PAGE_FACT,
  PAGE_NAME,
  PAGE_URL,
  podProcesses,
  servePage,
} from "./support/workloads.ts";

const CR = "capstan.dev/v1alpha1";
let kube: TestKube;
let home: string;
let dispatcher: Agent;
let images: Record<string, string>;

const RATE_LIMIT_QUESTION = "What happens when a client goes over the rate limit?";

function sdkWith(apiKey: string, via: Agent): OpenAI {
  return new OpenAI({
    apiKey,
    baseURL: `${ingressBase()}/api/v1`,
    maxRetries: 0,
    timeout: 60_000,
    fetch: ((url: string, init: object) => fetch(url, { ...init, dispatcher: via })) as never,
  });
}

function sdk(apiKey: string): OpenAI {
  return sdkWith(apiKey, dispatcher);
}

async function search(key: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${ingressBase()}/v1/rag/search`, {
    method: "POST",
    dispatcher,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  kube = e2eKube();
  home = mkdtempSync(join(tmpdir(), "capstan-e2e-"));
  // The first answer a user gets: the example channel's key as soon as its Secret exists, then the
  // question the chat test below asks, every 250 ms until the answer quotes the knowledge base.
  const firstAnswer = async (tls: { ca: string }) => {
    const early = ingressDispatcher(tls.ca);
    try {
      await eventually(
        "the first chat answer through the ingress",
        async () => {
          const completion = await sdkWith(
            await keyOf(kube, "AccessChannel", "website-chat"),
            early,
          ).chat.completions.create({
            model: "support-assistant",
            messages: [{ role: "user", content: RATE_LIMIT_QUESTION }],
          });
          return /429|Retry-After/.test(completion.choices[0]?.message.content ?? "") ? true : undefined;
        },
        240_000,
        250,
      );
    } finally {
      await early.close();
    }
  };
  const installed = await ensurePlatform(kube, home, [], firstAnswer);
  images = installed.images;
  dispatcher = ingressDispatcher(installed.tls.ca);
}, 900_000);

afterAll(() => {
  if (home) rmSync(home, { recursive: true, force: true });
});

describe("helm install on a real node", () => {
  it("runs the operator, gateway, search and the example Scraper, Ready by their readiness probes", async () => {
    for (const [ns, name] of [
      [SYSTEM_NS, "capstan-operator"],
      [SYSTEM_NS, "capstan-gateway"],
      [SYSTEM_NS, "capstan-search"],
      [DEMO_NS, "web"],
      // The platform Scraper the chart creates (scraping.platformScraper), behind scraping.url's default.
      [SYSTEM_NS, "capstan-scraper"],
    ] as const) {
      const d = await deploymentReady(kube, ns, name);
      const template = d.spec?.template as { spec: { containers: { readinessProbe?: unknown }[] } } | undefined;
      const containers = template?.spec.containers ?? [];
      expect(containers.length).toBeGreaterThan(0);
      expect(
        containers.every((c) => c.readinessProbe !== undefined),
        `${name} has readiness probes`,
      ).toBe(true);
    }
    const channelObj = await get(kube, "AccessChannel", CR, "website-chat", DEMO_NS);
    expect(condition(channelObj, "Ready")?.status).toBe("True");
  });
});

describe("installed from the node's registry, as a release", () => {
  it("runs every Capstan pod on an image pulled by digest from the registry, with the pull Secret", async () => {
    const { registry, images } = release();
    const pods = [...(await list(kube, "Pod", "v1", SYSTEM_NS)), ...(await list(kube, "Pod", "v1", DEMO_NS))].filter(
      (p) => p.status?.phase === "Running" && p.metadata.labels?.["app.kubernetes.io/part-of"] === "capstan",
    );
    expect(pods.length).toBeGreaterThanOrEqual(6);
    const released = new Set(Object.values(images));
    for (const p of pods) {
      const spec = p.spec as { containers: { image: string }[]; imagePullSecrets?: { name: string }[] };
      expect(spec.imagePullSecrets, p.metadata.name).toEqual([{ name: PULL_SECRET }]);
      const statuses = (p.status?.containerStatuses ?? []) as { image: string; imageID: string }[];
      for (const c of spec.containers) {
        expect(c.image, p.metadata.name).toMatch(new RegExp(`^${registry.host}/capstan/[a-z]+@sha256:[0-9a-f]{64}$`));
        expect(released.has(c.image), `${c.image} is one the release published`).toBe(true);
        // What the runtime reports it runs: the manifest it pulled under that digest.
        expect(statuses.map((s) => s.imageID)).toContain(c.image);
      }
    }
  });

  it("refuses a pull without credentials", async () => {
    const { registry, images } = release();
    const [repository, digest] = (images.gateway as string).split("@");
    const dispatcher = new Agent({ connect: { ca: readFileSync(registry.caFile, "utf8") } });
    const url = `https://${registry.host}/v2/${repository?.slice(registry.host.length + 1)}/manifests/${digest}`;
    const res = await fetch(url, { dispatcher, signal: AbortSignal.timeout(10_000) });
    await res.arrayBuffer();
    expect(res.status).toBe(401);
    await dispatcher.close();
  });
});

describe("chat through the ingress (official OpenAI SDK, HTTPS)", () => {
  it("answers a completion from the knowledge base with the key read from the Secret", async () => {
    const openai = sdk(await keyOf(kube, "AccessChannel", "website-chat"));
    const completion = await openai.chat.completions.create({
      model: "support-assistant",
      messages: [{ role: "user", content: RATE_LIMIT_QUESTION }],
    });
    expect(completion.object).toBe("chat.completion");
    expect(completion.choices[0]?.message.content).toMatch(/429|Retry-After/);
  });

  it("streams a completion that ends with a finish reason", async () => {
    const openai = sdk(await keyOf(kube, "AccessChannel", "website-chat"));
    const stream = await openai.chat.completions.create({
      model: "support-assistant",
      stream: true,
      messages: [{ role: "user", content: "How long are chat keys valid and where are they stored?" }],
    });
    let text = "";
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text.length).toBeGreaterThan(20);
    expect(finish).toBe("stop");
  });

  it("refuses an unknown key with 401 in the OpenAI error shape", async () => {
    const openai = sdk("cap_chat_not-a-real-key-000000000000");
    await expect(
      openai.chat.completions.create({ model: "x", messages: [{ role: "user", content: "hi" }] }),
    ).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it("admits exactly the channel's QPM across two gateway replicas sharing the in-chart Redis", async () => {
    const qpm = 6;
    await channel(kube, "e2e-burst", qpm);
    const openai = sdk(await keyOf(kube, "AccessChannel", "e2e-burst"));
    const gatewayPods = await list(kube, "Pod", "v1", SYSTEM_NS, "app.kubernetes.io/name=capstan-gateway");
    expect(gatewayPods.filter((p) => !p.metadata.deletionTimestamp).length).toBe(2);
    let admitted = 0;
    let limited = 0;
    // Three times the limit, three at a time, all inside one minute.
    for (let i = 0; i < qpm; i++) {
      const batch = await Promise.allSettled(
        [0, 1, 2].map(() =>
          openai.chat.completions.create({ model: "m", messages: [{ role: "user", content: "limits?" }] }),
        ),
      );
      for (const r of batch) {
        if (r.status === "fulfilled") admitted++;
        else if (r.reason instanceof OpenAI.RateLimitError) limited++;
        else throw r.reason;
      }
    }
    expect(admitted).toBe(qpm);
    expect(limited).toBe(2 * qpm);
  });
});

describe("search through the ingress", () => {
  it("finds the example knowledge with the SearchKey's key, in the spec's envelope", async () => {
    const key = await keyOf(kube, "SearchKey", "docs-search-backend");
    const res = await search(key, {
      text: "How many requests per minute does an access channel allow by default?",
      knowledgeIds: ["kb_product_docs"],
      minSimilarity: 0.3,
    });
    expect(res.status).toBe(200);
    expect(res.body.code).toBe(200);
    const data = res.body.data as { text: string; knowledgeId: string; score: number }[];
    expect(data.length).toBeGreaterThan(0);
    expect(data[0]?.knowledgeId).toBe("kb_product_docs");
    expect(data[0]?.text).toMatch(/QPM|requests per minute/);
  });

  it("answers 400 in the envelope for a knowledge base outside the key's scope", async () => {
    const key = await keyOf(kube, "SearchKey", "docs-search-backend");
    const res = await search(key, { text: "anything", knowledgeIds: ["kb_someone_else"] });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 400, data: null });
    expect(String(res.body.message)).toMatch(/invalid|permission/i);
  });
});

describe("scraping inside the cluster", () => {
  beforeAll(async () => {
    const nodeImage = images.operator as string;
    await servePage(kube, nodeImage);
    // In-cluster sources are private addresses: the platform team allows the cluster's ranges.
    const web = await get(kube, "Scraper", CR, "web", DEMO_NS);
    const generation = web?.metadata.generation ?? 0;
    await mergePatch(
      kube,
      { apiVersion: CR, kind: "Scraper", metadata: { name: "web", namespace: DEMO_NS } },
      {
        spec: { allowedHosts: ["198.18.0.0/15"] },
      },
    );
    await eventually("Scraper web observed its new generation", async () => {
      const s = await get(kube, "Scraper", CR, "web", DEMO_NS);
      return (s?.status?.observedGeneration as number) > generation ? s : undefined;
    });
    await deploymentReady(kube, DEMO_NS, "web");
    // The replaced pods are gone too, so every request below reaches the new configuration.
    await eventually("the Scraper's old pods gone", async () => {
      const pods = await list(kube, "Pod", "v1", DEMO_NS, "app.kubernetes.io/instance=web");
      return pods.length === 2 && pods.every((p) => !p.metadata.deletionTimestamp) ? pods : undefined;
    });
    // ...and the node's Service rules name the new pods, not the replaced ones.
    await serviceRouted(kube, DEMO_NS, "web");
  }, 300_000);

  it("scrapes a page served by a pod, through the scraper's Service", async () => {
    const svc = await get(kube, "Service", "v1", "web", DEMO_NS);
    const ip = svc?.spec?.clusterIP as string;
    const port = (svc?.spec?.ports as { port: number }[] | undefined)?.[0]?.port;
    const key = await secretValue(kube, DEMO_NS, "web-scraper-key", "key");
    const res = await fetch(`http://${ip}:${port}/scrape`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ url: PAGE_URL }),
    });
    const body = (await res.json()) as { success: boolean; data?: { markdown?: string } };
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.success).toBe(true);
    expect(body.data?.markdown).toContain(PAGE_FACT);
  });

  it("builds a KnowledgeBase from that page and serves it through search", async () => {
    await apply(kube, {
      apiVersion: CR,
      kind: "KnowledgeBase",
      metadata: { name: "cluster-guide", namespace: DEMO_NS },
      spec: { scraperRef: { name: "web" }, sources: [{ name: "Cluster guide", url: PAGE_URL }] },
    });
    await apply(kube, {
      apiVersion: CR,
      kind: "SearchKey",
      metadata: { name: "cluster-guide-search", namespace: DEMO_NS },
      spec: { keyName: "Cluster guide", knowledgeIds: ["kb_cluster_guide"], allowedCIDRs: ["127.0.0.1"] },
    });
    const kb = await eventually("KnowledgeBase cluster-guide ingested", async () => {
      const k = await get(kube, "KnowledgeBase", CR, "cluster-guide", DEMO_NS);
      return (k?.status?.documents as number) >= 1 && condition(k, "Ready")?.status === "True" ? k : undefined;
    });
    expect(kb.status?.chunks).toBeGreaterThan(0);
    const key = await eventually("SearchKey cluster-guide-search issued", async () =>
      (await get(kube, "SearchKey", CR, "cluster-guide-search", DEMO_NS))?.status?.secretName
        ? keyOf(kube, "SearchKey", "cluster-guide-search")
        : undefined,
    );
    const res = await eventually(
      "the new key and knowledge base reach search",
      async () => {
        const r = await search(key, {
          text: "How often are signing keys rotated by the lighthouse protocol?",
          knowledgeIds: ["kb_cluster_guide"],
          minSimilarity: 0.3,
        });
        return r.status === 200 && (r.body.data as unknown[]).length > 0 ? r : undefined;
      },
      60_000,
    );
    expect((res.body.data as { text: string }[])[0]?.text).toContain("full moon");
  });
});

describe("a default install's platform Scraper", () => {
  it("builds a KnowledgeBase whose URL source names no scraperRef", async () => {
    const scraper = await get(kube, "Scraper", CR, "capstan-scraper", SYSTEM_NS);
    expect(scraper?.metadata.annotations?.["helm.sh/hook"]).toContain("post-install");
    await apply(kube, {
      apiVersion: CR,
      kind: "KnowledgeBase",
      metadata: { name: "platform-scraped", namespace: DEMO_NS },
      spec: { sources: [{ name: "Cluster guide", url: PAGE_URL }] },
    });
    const kb = await eventually("KnowledgeBase platform-scraped ingested", async () => {
      const k = await get(kube, "KnowledgeBase", CR, "platform-scraped", DEMO_NS);
      return (k?.status?.documents as number) >= 1 && condition(k, "Ready")?.status === "True" ? k : undefined;
    });
    expect(kb.status?.chunks).toBeGreaterThan(0);
  });
});

describe("what the pods really run", () => {
  it("runs every Capstan container as non-root on a read-only root filesystem", async () => {
    const pods = [
      ...(await list(kube, "Pod", "v1", SYSTEM_NS, "app.kubernetes.io/part-of=capstan")),
      ...(await list(kube, "Pod", "v1", DEMO_NS, "app.kubernetes.io/part-of=capstan")),
    ].filter((p) => (p.status?.phase as string) === "Running" && !p.metadata.name.startsWith(PAGE_NAME));
    const names = pods.map((p) => p.metadata.name).join(" ");
    for (const prefix of ["capstan-operator", "capstan-gateway", "capstan-search", "web-"]) {
      expect(names, `a running ${prefix} pod`).toContain(prefix);
    }
    let rss = 0;
    let scrapers = 0;
    const perPod: string[] = [];
    const mib = (kib: number) => Math.round(kib / 1024);
    for (const pod of pods) {
      const procs = podProcesses(pod.metadata.uid as string);
      const podRss = procs.reduce((sum, p) => sum + p.rssKiB, 0);
      rss += podRss;
      // Scraper pods (Chromium with the scraper's API) apart: the figure is the platform without them.
      if (pod.metadata.labels?.["app.kubernetes.io/name"] === "capstan-scraper") scrapers += podRss;
      perPod.push(`${pod.metadata.name} ${mib(podRss)}`);
      expect(procs.length, `processes of ${pod.metadata.name}`).toBeGreaterThan(0);
      const scraper = pod.metadata.labels?.["app.kubernetes.io/name"] === "capstan-scraper";
      for (const p of procs) {
        expect(p.uid, `${pod.metadata.name}: ${p.command}`).not.toBe(0);
        expect(p.rootReadOnly, `${pod.metadata.name}: ${p.command} has a read-only /`).toBe(true);
        // The images' memory settings reach the processes (Dockerfile, runtime stages): the idle
        // collection needs --expose-gc; every Node process but the scraper's runs on jemalloc.
        if (!/^node\s/.test(p.command)) continue;
        expect(p.command, `${pod.metadata.name}: node runs with --expose-gc`).toContain("--expose-gc");
        if (!scraper) expect(mapsLibrary(p.pid, "libjemalloc"), `${pod.metadata.name}: jemalloc loaded`).toBe(true);
        if (pod.metadata.labels?.["app.kubernetes.io/name"] === "capstan-console") {
          expect(p.command, "the console's code optimised by Maglev at most").toContain("--max-opt=2");
        }
      }
    }
    console.log(
      `[e2e] resident memory: the platform's pods ${mib(rss)} MiB (without the Scrapers' pods ${mib(rss - scrapers)} MiB), the node's daemons ${mib(nodeDaemonsRssKiB())} MiB`,
    );
    console.log(`[e2e] resident memory per pod (MiB): ${perPod.sort().join(", ")}`);
  });
});
