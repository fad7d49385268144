// Who may tell search which address a request comes from, on the node with enforced
// NetworkPolicies. Search believes X-Forwarded-For only from the ingress controller's addresses
// (here the node's Traefik, 198.18.0.1), and the chart's NetworkPolicy admits search's public port
// from that controller and the clients named in networkPolicy.searchClientsFrom only. So a pod
// calling search directly is refused by the network, an admitted in-cluster client that forges
// X-Forwarded-For is judged by its own address, a client that forges it through the ingress is
// judged by the address the ingress saw, and a real client through the ingress gets its answer.
// Until 2026-11-28 the e2e install trusted the whole pod range and search's public port admitted
// every pod, and docs/install.md advised the same: any pod could claim any address.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Agent, fetch } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestKube } from "../ground/kube-client.ts";
import { apply, e2eKube, eventually, get, list, remove } from "./support/kube.ts";
import { DEMO_NS, ensurePlatform, ingressBase, ingressDispatcher, keyOf, SYSTEM_NS } from "./support/platform.ts";
import { type BusyboxPod, createNamespace, deleteNamespace, httpFromPod, startBusybox } from "./support/pods.ts";

const CR = "capstan.dev/v1alpha1";
/** A label this file's install admits to search's public port (networkPolicy.searchClientsFrom). */
const CLIENT_LABEL = "e2e-search-client";
const outsiderNs = `xff-outsider-${process.pid}`;
const clientNs = `xff-client-${process.pid}`;
/** TEST-NET-3: an address range nothing on this machine connects from. */
const FORGED = "203.0.113.9";
const searchService = `http://capstan-search.${SYSTEM_NS}.svc.cluster.local`;
const query = { text: "How many requests per minute does an access channel allow?", knowledgeIds: ["kb_product_docs"] };

let kube: TestKube;
let home: string;
let dispatcher: Agent;
let outsider: BusyboxPod;
let client: BusyboxPod;
/** Allows only FORGED's range: a request that gets an answer with it claimed FORGED successfully. */
let forgedOnlyKey: string;
/** The example key: allows 127.0.0.1, where the test's own requests to the ingress come from. */
let exampleKey: string;

const searchBody = JSON.stringify(query);
const fromPod = (pod: BusyboxPod, url: string, key: string, forged?: string) =>
  httpFromPod(kube, pod, url, {
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      ...(forged ? { "x-forwarded-for": forged } : {}),
    },
    body: searchBody,
    timeoutS: 4,
  });

async function throughIngress(key: string, forged?: string) {
  const res = await fetch(`${ingressBase()}/v1/rag/search`, {
    method: "POST",
    dispatcher,
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      ...(forged ? { "x-forwarded-for": forged } : {}),
    },
    body: searchBody,
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, body: (await res.json()) as { code?: number; message?: string } };
}

beforeAll(async () => {
  kube = e2eKube();
  home = mkdtempSync(join(tmpdir(), "capstan-e2e-xff-"));
  const installed = await ensurePlatform(kube, home, [
    `networkPolicy.searchClientsFrom[0].namespaceSelector.matchLabels.${CLIENT_LABEL}=allowed`,
  ]);
  dispatcher = ingressDispatcher(installed.tls.ca);
  await apply(kube, {
    apiVersion: CR,
    kind: "SearchKey",
    metadata: { name: "forged-range-only", namespace: DEMO_NS },
    spec: { keyName: "Forged range only", knowledgeIds: ["kb_product_docs"], allowedCIDRs: ["203.0.113.0/24"] },
  });
  forgedOnlyKey = await eventually("SearchKey forged-range-only issued", async () =>
    (await get(kube, "SearchKey", CR, "forged-range-only", DEMO_NS))?.status?.secretName
      ? keyOf(kube, "SearchKey", "forged-range-only")
      : undefined,
  );
  exampleKey = await keyOf(kube, "SearchKey", "docs-search-backend");
  await Promise.all([
    createNamespace(kube, outsiderNs),
    createNamespace(kube, clientNs, { [CLIENT_LABEL]: "allowed" }),
  ]);
  [outsider, client] = await Promise.all([
    startBusybox(kube, outsiderNs, "caller"),
    startBusybox(kube, clientNs, "caller"),
  ]);
  // Search answers 403 to the key with the client's real address once it knows the new key.
  await eventually(
    "search to know the new key",
    async () => ((await throughIngress(forgedOnlyKey)).status === 403 ? true : undefined),
    60_000,
  );
}, 900_000);

afterAll(async () => {
  await Promise.all([deleteNamespace(kube, outsiderNs), deleteNamespace(kube, clientNs)]);
  await remove(kube, "SearchKey", CR, "forged-range-only", DEMO_NS);
  if (home) rmSync(home, { recursive: true, force: true });
});

describe("forwarded addresses search believes", () => {
  it("refuses a pod's direct call to search's public port: only the ingress controller is admitted", async () => {
    const [pod] = await list(kube, "Pod", "v1", SYSTEM_NS, "app.kubernetes.io/name=capstan-search");
    const podIp = pod?.status?.podIP as string;
    for (const url of [`${searchService}/v1/rag/search`, `http://${podIp}:8081/v1/rag/search`]) {
      const res = await fromPod(outsider, url, forgedOnlyKey, FORGED);
      expect(res.connected, `${url}: ${res.status} ${res.body.slice(0, 200)}`).toBe(false);
      // Dropped (no answer until the timeout), not refused: the policy, not a missing endpoint.
      expect(res.body).not.toMatch(/refused/i);
    }
    // The same pod reaches the gateway's public port (open to every pod), so the network, DNS and
    // the Service work: the refusal above is the policy's.
    const gateway = await httpFromPod(
      kube,
      outsider,
      `http://capstan-gateway.${SYSTEM_NS}.svc.cluster.local/api/v1/models`,
    );
    expect(gateway.status, gateway.body).toBe(401);
  });

  it("judges an admitted in-cluster client by its own address, whatever X-Forwarded-For it sends", async () => {
    const forged = await fromPod(client, `${searchService}/v1/rag/search`, forgedOnlyKey, FORGED);
    expect(forged.connected, forged.body.slice(0, 200)).toBe(true);
    // 403 is search's answer to an address outside allowedCIDRs (the network refuses no connection here).
    expect(forged.status, forged.body.slice(0, 200)).toBe(403);
  });

  it("judges a client through the ingress by the address the ingress saw, not the one it forged", async () => {
    const forged = await throughIngress(forgedOnlyKey, FORGED);
    expect(forged.status, JSON.stringify(forged.body)).toBe(403);
    // A real client (127.0.0.1, allowed by the example key) still gets its answer, forged header or not.
    for (const header of [undefined, FORGED]) {
      const res = await throughIngress(exampleKey, header);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.code).toBe(200);
    }
  });
});
