// The chart's ValidatingAdmissionPolicy on the real kube-apiserver (RBAC on): a user bound to an
// editor Role on the five kinds who may not get a Secret cannot make a resource name it, on create
// or on any later spec update, nor run a Scraper image outside the allowed list (issue 25, the
// confused deputy). Rendered from charts/capstan with helm, bound to this file's namespace only, and
// exercised by impersonated users; the operator's own flows (an editor's resources, a
// ServiceAccount bound to the chart's rules) still reach Ready under it.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createLogger, createRegistry } from "@capstan/shared";
import { KubeApiError } from "@capstan/shared/kube";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadOperatorConfig } from "../../operator/src/config.ts";
import { Operator } from "../../operator/src/manager.ts";
import type { TestKube } from "../ground/kube-client.ts";
import { ChartRun, MINIMAL, one, type Rendered } from "./chart-kit.ts";
import {
  CAP,
  create,
  eventually,
  get,
  InMemorySearchDocuments,
  type Obj,
  patch,
  pathOf,
  whenCondition,
} from "./helpers.ts";
import { applyRendered, grant, impersonating, serviceAccountClient } from "./rbac-kit.ts";

const run = new ChartRun("vap");
const ns = run.ns;
const SELECTOR = "capstan-vap-test";
const rbacDir = fileURLToPath(new URL("../../charts/capstan/files/rbac/", import.meta.url));
let alice: TestKube; // editor of the five kinds; may get Secret team-key only
let bob: TestKube; // the same, and may create pods
let policy: Rendered[] = [];
let operator: Operator | undefined;

/** The API server's answer to a write: "ok", or the status and message of its refusal. */
async function attempt(write: Promise<unknown>): Promise<"ok" | { status: number; message: string }> {
  try {
    await write;
    return "ok";
  } catch (err) {
    if (err instanceof KubeApiError) return { status: err.status, message: err.message };
    throw err;
  }
}

/** A create checked by admission but not stored (dryRun=All runs validating admission policies). */
const dryCreate = (client: TestKube, obj: Obj) =>
  attempt(client.json(pathOf(obj.apiVersion, obj.kind, ns), { method: "POST", body: obj, query: { dryRun: "All" } }));

const res = (kind: string, name: string, spec: Record<string, unknown>): Obj => ({
  apiVersion: CAP,
  kind,
  metadata: { name, namespace: ns },
  spec,
});
const ref = (name: string) => ({ name, key: "value" });
const agentWith = (name: string, secret?: string) =>
  res("Agent", name, {
    provider: {
      baseURL: "https://llm.example/v1",
      model: "m",
      ...(secret ? { apiKeySecretRef: ref(secret) } : {}),
    },
  });

function expectRefused(seen: Awaited<ReturnType<typeof attempt>>, ...parts: string[]): void {
  expect(seen, "expected a refusal").not.toBe("ok");
  const { status, message } = seen as { status: number; message: string };
  expect(status).toBe(403);
  for (const p of parts) expect(message).toContain(p);
}

beforeAll(async () => {
  await run.setup();
  const admin = run.admin;
  await admin.json(`/api/v1/namespaces/${ns}`, {
    method: "PATCH",
    contentType: "application/merge-patch+json",
    body: { metadata: { labels: { [SELECTOR]: ns } } },
  });
  const objects = await run.render([
    ...MINIMAL,
    `admission.namespaceSelector.matchLabels.${SELECTOR}=${ns}`,
    "admission.scraperImagePrefixes[0]=registry.example/team/",
  ]);
  policy = [one(objects, "ValidatingAdmissionPolicy"), one(objects, "ValidatingAdmissionPolicyBinding")];
  for (const o of policy) await applyRendered(admin, o, ns);
  for (const name of ["db-password", "team-key"])
    await create(admin, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name, namespace: ns },
      data: { value: Buffer.from(`${name}-value`).toString("base64") },
    });
  const editor = [
    {
      apiGroups: ["capstan.dev"],
      resources: ["agents", "accesschannels", "searchkeys", "knowledgebases", "scrapers"],
      verbs: ["*"],
    },
    { apiGroups: [""], resources: ["secrets"], resourceNames: ["team-key"], verbs: ["get"] },
  ];
  const users = [
    { kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "alice" },
    { kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "bob" },
  ];
  await grant(admin, ns, "capstan-editor", editor, users);
  await grant(admin, ns, "pod-runner", [{ apiGroups: [""], resources: ["pods"], verbs: ["create"] }], [users[1]]);
  alice = impersonating(admin, "alice", ns);
  bob = impersonating(admin, "bob", ns);
  // The API server loads a new policy within seconds: wait until it refuses.
  await eventually(
    "the reference policy to be in force",
    async () => (await dryCreate(alice, agentWith("canary", "db-password"))) !== "ok",
    30_000,
  );
});

afterAll(async () => {
  await operator?.stop();
  for (const o of policy.reverse()) await run.admin.json(pathOfPolicy(o), { method: "DELETE" }).catch(() => {});
  run.cleanup();
});

const pathOfPolicy = (o: Rendered) =>
  `/apis/admissionregistration.k8s.io/v1/${o.kind === "ValidatingAdmissionPolicy" ? "validatingadmissionpolicies" : "validatingadmissionpolicybindings"}/${o.metadata.name}`;

describe("the chart's reference policy (ValidatingAdmissionPolicy)", () => {
  it("refuses every Secret reference of the five kinds that the writer may not get, naming the field and the Secret", async () => {
    const cases: [Obj, string][] = [
      [agentWith("a1", "db-password"), "spec.provider.apiKeySecretRef"],
      [
        res("AccessChannel", "c1", { channelName: "c", agentRef: { name: "x" }, keySecretRef: ref("db-password") }),
        "spec.keySecretRef",
      ],
      [
        res("SearchKey", "s1", { keyName: "k", knowledgeIds: ["kb_x"], keySecretRef: ref("db-password") }),
        "spec.keySecretRef",
      ],
      [
        res("KnowledgeBase", "k1", {
          embedding: { provider: "openai", baseURL: "https://e.example/v1", apiKeySecretRef: ref("db-password") },
        }),
        "spec.embedding.apiKeySecretRef",
      ],
      [
        res("Scraper", "r1", { auth: { enabled: true, apiKeySecretRef: ref("db-password") } }),
        "spec.auth.apiKeySecretRef",
      ],
      [res("Scraper", "r2", { llm: { apiKeySecretRef: ref("db-password") } }), "spec.llm.apiKeySecretRef"],
      [
        res("Agent", "a4", {
          upstreams: [
            { baseURL: "https://llm.example/v1", model: "m", apiKeySecretRef: ref("team-key") },
            { kind: "anthropic", baseURL: "https://llm2.example/v1", model: "c", apiKeySecretRef: ref("db-password") },
          ],
        }),
        "spec.upstreams[1].apiKeySecretRef",
      ],
      [
        res("Scraper", "r3", {
          browser: {
            proxy: {
              server: "http://p:3128",
              usernameSecretRef: ref("team-key"),
              passwordSecretRef: ref("db-password"),
            },
          },
        }),
        "spec.browser.proxy.passwordSecretRef",
      ],
    ];
    for (const [obj, field] of cases) {
      const seen = await dryCreate(alice, obj);
      expectRefused(seen, `${field} names Secret db-password`, `namespace ${ns}`, "docs/security.md");
      // Only the Secret that may not be read is named.
      expect((seen as { message: string }).message).not.toContain("names Secret team-key");
    }
    // The same resources naming a Secret the writer may get are admitted, and so is the admin.
    expect(await dryCreate(alice, agentWith("a2", "team-key"))).toBe("ok");
    expect(await dryCreate(alice, res("Scraper", "r4", { llm: { apiKeySecretRef: ref("team-key") } }))).toBe("ok");
    expect(await dryCreate(run.admin, agentWith("a3", "db-password"))).toBe("ok");
  });

  it("checks every update of the spec: pointing a reference elsewhere, or redirecting where a named Secret goes, is refused", async () => {
    await create(alice, agentWith("helper", "team-key"));
    await create(alice, res("AccessChannel", "web", { channelName: "web", agentRef: { name: "helper" } }));
    const ch = { apiVersion: CAP, kind: "AccessChannel", ns, name: "web" };
    expectRefused(
      await attempt(patch(alice, ch, { spec: { keySecretRef: ref("db-password") } })),
      "spec.keySecretRef names Secret db-password",
    );
    const helper = { apiVersion: CAP, kind: "Agent", ns, name: "helper" };
    expectRefused(
      await attempt(patch(alice, helper, { spec: { provider: { apiKeySecretRef: ref("db-password") } } })),
      "spec.provider.apiKeySecretRef names Secret db-password",
    );
    expect(await attempt(patch(alice, helper, { spec: { provider: { baseURL: "https://other.example/v1" } } }))).toBe(
      "ok",
    );

    // Written by someone who may read the Secret (or before the policy existed): the reference stays.
    await create(run.admin, agentWith("admin-made", "db-password"));
    const made = { apiVersion: CAP, kind: "Agent", ns, name: "admin-made" };
    // Labels and annotations do not change where the Secret goes: admitted.
    expect(await attempt(patch(alice, made, { metadata: { labels: { team: "web" } } }))).toBe("ok");
    // Any spec change does (here: where the provider key is sent): refused.
    expectRefused(
      await attempt(patch(alice, made, { spec: { provider: { baseURL: "https://listener.attacker.example/v1" } } })),
      "spec.provider.apiKeySecretRef names Secret db-password",
    );
    const after = await get(run.admin, CAP, "Agent", ns, "admin-made");
    expect(after?.spec?.provider).toMatchObject({ baseURL: "https://llm.example/v1" });
  });

  it("admits a Scraper image only from the allowed prefixes, unless the writer may create pods", async () => {
    const scraper = (name: string, image: string) => res("Scraper", name, { image });
    expect(await dryCreate(alice, scraper("i1", "ghcr.io/capstan-dev/scraper:0.1.0"))).toBe("ok");
    expect(await dryCreate(alice, scraper("i2", "registry.example/team/scraper:2"))).toBe("ok");
    expectRefused(
      await dryCreate(alice, scraper("i3", "evil.example/scraper:1")),
      "spec.image evil.example/scraper:1 is not among the allowed images",
      "ghcr.io/capstan-dev/scraper:",
    );
    // A prefix is not a repository: scraper-evil is another image.
    expectRefused(
      await dryCreate(alice, scraper("i4", "ghcr.io/capstan-dev/scraper-evil:1")),
      "not among the allowed images",
    );
    // Whoever may create pods could run that image directly.
    expect(await dryCreate(bob, scraper("i5", "evil.example/scraper:1"))).toBe("ok");
  });

  it("the operator's own flows pass: an editor's resources reach Ready under a ServiceAccount bound to the chart's rules", async () => {
    const rules = (f: string) => parse(readFileSync(rbacDir + f, "utf8"));
    const sa = await serviceAccountClient(
      run.admin,
      ns,
      "capstan-operator",
      rules("operator-rules.yaml"),
      rules("release-namespace-rules.yaml"),
    );
    operator = new Operator(
      loadOperatorConfig(
        {},
        { namespace: ns, watchNamespace: ns, instanceId: "vap-test", metricsPort: 0, healthPort: 0 },
      ),
      {
        kubeConfig: sa.kubeConfig,
        registry: createRegistry({ defaultMetrics: false }),
        logger: createLogger({ name: "operator-vap", level: process.env.OPERATOR_TEST_LOG ?? "silent" }),
        search: new InMemorySearchDocuments(),
      },
    );
    await operator.start();
    await create(
      alice,
      res("SearchKey", "own-key", { keyName: "k", knowledgeIds: ["kb_docs"], keySecretRef: ref("team-key") }),
    );
    await create(alice, res("KnowledgeBase", "docs", { sources: [{ name: "a", text: "Capstan answers questions." }] }));
    await whenCondition(run.admin, "AccessChannel", ns, "web", "Ready", "True");
    await whenCondition(run.admin, "SearchKey", ns, "own-key", "Ready", "True");
    const kb = await whenCondition(run.admin, "KnowledgeBase", ns, "docs", "Ready", "True");
    // The operator's finalizer (a metadata update by its ServiceAccount) was admitted.
    expect(kb.metadata.finalizers?.length).toBeGreaterThan(0);
    const counts = await operator.registry.getSingleMetricAsString("rest_client_requests_total");
    expect(counts).not.toMatch(/code="403"/);
  });
});
