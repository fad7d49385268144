// Search keys and knowledge bases in the console, in Chromium, against the real API server (RBAC
// on), a real operator and a real search service (local embedding model): a search key made in the
// form (scope one knowledge base, CIDRs checked) works on the search API for that base only; an
// uploaded Markdown document is ingested by the operator and found with "try a search", and so is
// an uploaded PDF (sent as its bytes; a file that is not a PDF and one over the size limit are
// refused in words on the page); a knowledge base made in the form (its id checked with the CRD's
// schema) takes an HTML upload, found too.
import { buildApp as buildSearch, loadLocalEmbedder, loadSearchConfig } from "@capstan/search";
import { KubeSource, ResourceView } from "@capstan/shared/resource-view";
import type { FastifyInstance } from "fastify";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Operator } from "../../operator/src/manager.ts";
import { makePdf } from "../../services/shared/src/documents/pdf.fixture.ts";
import { launchChromium } from "../ground/chromium.ts";
import { signIn, tokenWithRoles } from "../ground/console-users.ts";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import {
  CAP,
  create,
  eventually,
  serveSearchToOperator,
  startOperatorFor,
  TEST_KEY_VERIFIER,
  whenCondition,
} from "../operator/helpers.ts";
import { type RunningConsole, screenshot, startConsole, trySearchFinds } from "./helpers.ts";

const ns = `console-kb-${process.pid}-${Date.now().toString(36)}`;
const TOKEN = "console-knowledge-test-internal-token-0123";
let admin: TestKube;
let operator: Operator;
let search: FastifyInstance;
let source: KubeSource;
let searchUrl = "";
let consoleApp: RunningConsole;
let browser: Browser;
let token = "";
let key = "";

const searchWith = async (apiKey: string, knowledgeIds: string[], text: string) => {
  const res = await fetch(`${searchUrl}/v1/rag/search`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ knowledgeIds, text, minSimilarity: 0 }),
  });
  return {
    status: res.status,
    body: (await res.json()) as { code: number; message: string; data: { text: string }[] | null },
  };
};

/** Waits until the operator reports at least `documents` ingested documents of the knowledge base. */
const ingested = (name: string, documents: number) =>
  eventually(
    `${name}: ${documents} documents ingested`,
    async () => {
      const kb = await admin.json<{ status?: { documents?: number } }>(
        `/apis/capstan.dev/v1alpha1/namespaces/${ns}/knowledgebases/${name}`,
      );
      return (kb.status?.documents ?? 0) >= documents ? true : undefined;
    },
    120_000,
  );

beforeAll(async () => {
  admin = harnessKubeClient();
  await installCrds(admin);
  await ensureNamespace(admin, ns);
  const view = new ResourceView();
  source = new KubeSource(view, admin, { namespace: ns, kinds: ["SearchKey", "KnowledgeBase"] });
  await source.start();
  const embedder = await loadLocalEmbedder(loadSearchConfig({}));
  search = await buildSearch(
    { internalToken: TOKEN, keyVerifier: TEST_KEY_VERIFIER, logLevel: "warn" },
    { view, embedders: [embedder] },
  );
  const served = await serveSearchToOperator(admin, ns, search, TOKEN, 60_000);
  searchUrl = served.url;
  operator = startOperatorFor(inject("kubeconfig"), ns, {
    search: { internalUrl: served.internalUrl, publicUrl: searchUrl },
  });
  await operator.start();
  for (const [name, text] of [
    ["handbook", "New employees receive a laptop and a badge on their first day."],
    ["secret-plans", "The board plans to open an office in Lisbon next spring."],
  ] as const) {
    await create(admin, {
      apiVersion: CAP,
      kind: "KnowledgeBase",
      metadata: { name, namespace: ns },
      spec: { sources: [{ name, text }] },
    });
    await whenCondition(admin, "KnowledgeBase", ns, name, "Ready", "True");
  }
  token = await tokenWithRoles(admin, ns, "editor", ["channel-owner", "knowledge-editor"]);
  consoleApp = await startConsole(inject("kubeconfig"), { defaultNamespace: ns, searchUrl });
  browser = await launchChromium();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await consoleApp?.close();
  await operator?.stop();
  source?.stop();
  await search?.close();
});

describe("search keys and knowledge bases in the console", () => {
  it("a search key made in the form (scope: one knowledge base) works for that base only", async () => {
    const page = await browser.newPage();
    await signIn(page, consoleApp.url, token);
    await page.goto(`${consoleApp.url}/#/search-keys`);
    await page.getByRole("button", { name: "New search key" }).click();
    await page.getByLabel("Resource name").fill("reader");
    await page.getByLabel("Key name").fill("Reader");
    await page.getByLabel("Scope: knowledge bases").selectOption(["kb_handbook"]);
    await page.getByLabel("Valid until, UTC (empty: no end)").fill("2099-01-01T00:00");
    await expect.poll(() => page.getByRole("note").textContent()).toContain("90 days");
    await page.getByLabel("Allowed client IPs or CIDRs (empty: any)").fill("10.0.0.0/33");
    await page.getByRole("button", { name: "Create search key" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("not an IP address or CIDR: 10.0.0.0/33");
    await page.getByLabel("Allowed client IPs or CIDRs (empty: any)").fill("");
    await screenshot(page, "search-key-new");
    await page.getByRole("button", { name: "Create search key" }).click();
    await page.getByRole("button", { name: "Add key for Reader" }).click();
    const shown = page.getByTestId("key-value");
    await shown.waitFor({ timeout: 60_000 });
    key = (await shown.textContent()) ?? "";
    expect(key).toMatch(/^cap_srch_/);
    await screenshot(page, "search-key-shown", key);
    await page.getByRole("button", { name: "I have copied the key" }).click();
    await page.getByRole("button", { name: "Rotate key of Reader" }).waitFor();
    await screenshot(page, "search-keys");

    const found = await eventually("search to accept the key", async () => {
      const r = await searchWith(key, ["kb_handbook"], "What do new employees get?");
      return r.status === 200 ? r : undefined;
    });
    expect(found.body.data?.[0]?.text).toContain("laptop");
    const outside = await searchWith(key, ["kb_secret_plans"], "office plans");
    expect(outside.status).toBe(400);
    expect(outside.body.data).toBeNull();
    await page.close();
  });

  it("an uploaded Markdown document is ingested and found with try a search", async () => {
    const page = await browser.newPage();
    await signIn(page, consoleApp.url, token);
    await page.goto(`${consoleApp.url}/#/knowledge`);
    await page.getByRole("link", { name: "kb_handbook" }).waitFor();
    await screenshot(page, "knowledge-bases");
    await page.getByRole("link", { name: "kb_handbook" }).click();
    await page.getByLabel("Document (Markdown, text, HTML or PDF)").setInputFiles({
      name: "visitors.md",
      mimeType: "text/markdown",
      buffer: Buffer.from("# Visitors\n\nVisitors park in garage C; the gate code for visitors is ZEBRA-42.\n"),
    });
    await page.getByRole("button", { name: "Upload" }).click();
    await expect.poll(() => page.getByText("visitors.md added").count()).toBe(1);
    await ingested("handbook", 2);
    await page.getByRole("button", { name: "Refresh" }).click();
    await trySearchFinds(page, "Where do visitors park and what is the gate code?", "ZEBRA-42");
    await screenshot(page, "knowledge-base");
    await page.close();
  });

  it("an uploaded PDF is ingested and found with try a search; a bad or too large file is refused in words", async () => {
    const page = await browser.newPage();
    await signIn(page, consoleApp.url, token);
    await page.goto(`${consoleApp.url}/#/knowledge/handbook`);
    const input = page.getByLabel("Document (Markdown, text, HTML or PDF)");
    expect((await input.getAttribute("accept"))?.split(",")).toContain(".pdf");
    // Not a PDF: the console's converter says why, and nothing is added.
    await input.setInputFiles({ name: "fake.pdf", mimeType: "application/pdf", buffer: Buffer.from("not a pdf") });
    await page.getByRole("button", { name: "Upload" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("fake.pdf cannot be read: not a PDF");
    // Over 8 MiB: refused by the page before anything is sent.
    await input.setInputFiles({
      name: "huge.pdf",
      mimeType: "application/pdf",
      buffer: Buffer.alloc(8 * 1024 * 1024 + 1, 0x20),
    });
    await page.getByRole("button", { name: "Upload" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("huge.pdf is larger than 8 MiB");

    const pdf = await makePdf({
      title: "Bicycles",
      sections: [
        {
          heading: "Bicycle parking",
          paragraphs: ["Bicycles are parked in the courtyard rack; the code of the rack's lock is OTTER-7."],
        },
      ],
    });
    await input.setInputFiles({ name: "bicycles.pdf", mimeType: "application/pdf", buffer: pdf });
    await page.getByRole("button", { name: "Upload" }).click();
    await expect.poll(() => page.getByText("bicycles.pdf added").count()).toBe(1);
    expect(await page.getByRole("alert").count()).toBe(0);
    const cm = await admin.json<{ data: Record<string, string> }>(
      `/api/v1/namespaces/${ns}/configmaps/handbook-doc-bicycles`,
    );
    expect(cm.data["bicycles.pdf"]).toContain("OTTER-7");
    await ingested("handbook", 3);
    await trySearchFinds(page, "Where do I park my bicycle, and what is the lock code?", "OTTER-7");
    await page.close();
  });

  it("a knowledge base made in the form takes an HTML upload that try a search finds", async () => {
    const page = await browser.newPage();
    await signIn(page, consoleApp.url, token);
    await page.goto(`${consoleApp.url}/#/knowledge`);
    await page.getByRole("button", { name: "New knowledge base" }).click();
    await page.getByLabel("Resource name").fill("faq");
    await page.getByLabel("Knowledge id (empty: kb_ and the name)").fill("FAQ!");
    await page.getByLabel("Description").fill("Questions customers ask");
    await page.getByRole("button", { name: "Create knowledge base" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("knowledgeId");
    await page.getByLabel("Knowledge id (empty: kb_ and the name)").fill("kb_faq");
    await screenshot(page, "knowledge-base-new");
    await page.getByRole("button", { name: "Create knowledge base" }).click();
    await page.waitForURL(/#\/knowledge\/faq$/);
    const kb = await admin.json<{ spec: { knowledgeId?: string; description?: string } }>(
      `/apis/capstan.dev/v1alpha1/namespaces/${ns}/knowledgebases/faq`,
    );
    expect(kb.spec).toMatchObject({ knowledgeId: "kb_faq", description: "Questions customers ask" });
    // Try a search needs a search key covering the new base (made here by the platform team).
    await create(admin, {
      apiVersion: CAP,
      kind: "SearchKey",
      metadata: { name: "faq-reader", namespace: ns },
      spec: { keyName: "FAQ reader", knowledgeIds: ["kb_faq"] },
    });
    await whenCondition(admin, "SearchKey", ns, "faq-reader", "Ready", "True");
    await page.getByLabel("Document (Markdown, text, HTML or PDF)").setInputFiles({
      name: "returns.html",
      mimeType: "text/html",
      buffer: Buffer.from(
        "<html><body><h1>Returns</h1><p>Returns are accepted within 45 days with the receipt.</p>" +
          "<script>alert(1)</script></body></html>",
      ),
    });
    await page.getByRole("button", { name: "Upload" }).click();
    await expect.poll(() => page.getByText("returns.html added").count()).toBe(1);
    await ingested("faq", 1);
    await trySearchFinds(page, "How long do I have to return an item?", "45 days");
    expect(await page.getByTestId("search-hit").first().textContent()).not.toContain("alert(1)");
    await page.close();
  });

  it("shows documents uploaded through search's documents API, with search's current counts", async () => {
    await create(admin, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "faq-writer-key", namespace: ns },
      data: { key: Buffer.from("console-faq-writer-key-0123").toString("base64") },
    });
    await create(admin, {
      apiVersion: CAP,
      kind: "SearchKey",
      metadata: { name: "faq-writer", namespace: ns },
      spec: {
        keyName: "FAQ writer",
        knowledgeIds: ["kb_faq"],
        permissions: ["read", "write"],
        keySecretRef: { name: "faq-writer-key", key: "key" },
      },
    });
    await whenCondition(admin, "SearchKey", ns, "faq-writer", "Ready", "True");
    const uploaded = await eventually("the upload", async () => {
      const res = await fetch(`${searchUrl}/v1/knowledge-bases/kb_faq/documents/shipping.txt`, {
        method: "PUT",
        headers: { authorization: "Bearer console-faq-writer-key-0123", "content-type": "text/plain" },
        body: "Orders ship within two working days.",
      });
      return res.status === 200 ? true : undefined;
    });
    expect(uploaded).toBe(true);
    const page = await browser.newPage();
    await signIn(page, consoleApp.url, token);
    await page.goto(`${consoleApp.url}/#/knowledge/faq`);
    await expect.poll(() => page.getByTestId("kb-counts").textContent()).toContain("2 documents (1 uploaded)");
    expect(await page.getByRole("list", { name: "Uploaded documents" }).textContent()).toContain(
      "shipping.txt (text, 1 chunks)",
    );
    await page.close();
  });

  it("shows agents and scrapers with their health", async () => {
    const page = await browser.newPage();
    await signIn(page, consoleApp.url, token);
    await page.goto(`${consoleApp.url}/#/agents`);
    await page.getByRole("heading", { name: "Agents", exact: true }).waitFor();
    await page.getByRole("heading", { name: "Scrapers", exact: true }).waitFor();
    await screenshot(page, "agents");
    await page.close();
  });
});
