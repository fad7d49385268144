// The chart's console as a user reaches it, on the installed platform: Debian's Chromium opens
// https://console.capstan.test/ through the ingress (Traefik, the test CA's certificate pinned by
// its public key, nothing else reachable), a wrong token is refused on the page, a channel owner
// signs in, switches to the examples' namespace, creates an access channel of the example agent,
// adds its key and copies it with the page's Copy button; the key read back from the clipboard
// then chats with the example agent through the same ingress, and stops working once the channel
// is deleted on the page.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { type Agent, fetch } from "undici";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { launchChromiumReaching, spkiSha256 } from "../ground/chromium.ts";
import { recordProblems, signIn, tokenWithRoles } from "../ground/console-users.ts";
import type { TestKube } from "../ground/kube-client.ts";
import { e2eKube, eventually, get, list, remove } from "./support/kube.ts";
import { CONSOLE_HOST, DEMO_NS, ensurePlatform, ingressBase, ingressDispatcher } from "./support/platform.ts";

const CR = "capstan.dev/v1alpha1";
const RBAC = "rbac.authorization.k8s.io/v1";
const CHANNEL = `browser-${Date.now().toString(36)}`;
const OWNER_ROLE = "capstan-channel-owner";
const USER = `console-user-${Date.now().toString(36)}`;
let kube: TestKube;
let home: string;
let dispatcher: Agent;
let browser: Browser;
let context: BrowserContext;
let consoleUrl: string;
let token: string;

/**
 * Waits until no pod on the node is starting or stopping, then 3 s more. Chromium fails every
 * request in flight with ERR_NETWORK_CHANGED when the host's interfaces change (a pod's veth and
 * its IPv6 address coming or going; the previous file's namespaces are still being deleted when
 * this one starts). A user's browser, off the node, does not meet those; it may meet its own
 * network's changes, so the page resends reads; a write that meets one fails, as it would for the user.
 */
async function nodeNetworkSettled(admin: TestKube): Promise<void> {
  let busy: string[] = [];
  const settled = await eventually(
    "no pod on the node starting or stopping",
    async () => {
      const pods = await list(admin, "Pod", "v1");
      busy = pods
        .filter(
          (p) => p.metadata.deletionTimestamp || (p.status as { phase?: string } | undefined)?.phase === "Pending",
        )
        .map((p) => `${p.metadata.namespace}/${p.metadata.name}`);
      return busy.length === 0 ? true : undefined;
    },
    120_000,
  ).catch(() => false);
  // Not a failure of this test: it goes on, and says what was still moving.
  if (!settled) console.warn(`[e2e] console-browser: pods still starting or stopping after 2 min: ${busy.join(", ")}`);
  await new Promise((r) => setTimeout(r, 3_000));
}

/** One chat through the ingress with `key`, as an application would send it. */
async function chat(key: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${ingressBase()}/api/v1/chat/completions`, {
    method: "POST",
    dispatcher,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "support-assistant",
      messages: [{ role: "user", content: "What happens when a client goes over the rate limit?" }],
    }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  kube = e2eKube();
  home = mkdtempSync(join(tmpdir(), "capstan-e2e-console-"));
  const { tls } = await ensurePlatform(kube, home);
  dispatcher = ingressDispatcher(tls.ca);
  const ingress = new URL(inject("e2eIngressHttps"));
  consoleUrl = `https://${CONSOLE_HOST}:${ingress.port || 443}/`;
  await nodeNetworkSettled(kube);
  const spki = spkiSha256(readFileSync(join(tls.dir, "tls.crt"), "utf8"));
  browser = await launchChromiumReaching(CONSOLE_HOST, ingress.hostname, spki);
  // The Copy button writes the clipboard; reading it back is what pasting does.
  context = await browser.newContext();
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(consoleUrl).origin });
  token = await tokenWithRoles(kube, DEMO_NS, USER, ["channel-owner"]);
}, 900_000);

afterAll(async () => {
  await browser?.close();
  await dispatcher?.close();
  if (kube) {
    await remove(kube, "AccessChannel", CR, CHANNEL, DEMO_NS);
    // The user's binding and the Role docs/console/rbac/channel-owner.yaml made for them.
    for (const path of [`rolebindings/${USER}-${OWNER_ROLE}`, `roles/${OWNER_ROLE}`]) {
      await kube.json(`/apis/${RBAC}/namespaces/${DEMO_NS}/${path}`, { method: "DELETE" }).catch(() => undefined);
    }
    await remove(kube, "ServiceAccount", "v1", USER, DEMO_NS);
  }
  if (home) rmSync(home, { recursive: true, force: true });
});

/** In the examples' namespace: a new channel of the example agent, with its first key shown. */
async function createChannelOnPage(page: Page): Promise<void> {
  await page.getByLabel("Namespace").fill(DEMO_NS);
  await page.getByRole("button", { name: "Switch" }).click();
  await page.getByRole("link", { name: /Website chat/ }).waitFor();
  await page.getByRole("button", { name: "New channel" }).click();
  await page.getByLabel("Resource name").fill(CHANNEL);
  await page.getByLabel("Channel name").fill("Browser e2e");
  await page.getByLabel("Agent").selectOption("support-assistant");
  await page.getByRole("button", { name: "Create channel" }).click();
  await page.getByRole("heading", { name: "Browser e2e" }).waitFor();
  await page.getByRole("button", { name: "Add key" }).click();
  await page.getByTestId("key-value").waitFor({ timeout: 120_000 });
}

describe("the console through the ingress in a browser", () => {
  it("refuses a token the API server does not accept, on the page", async () => {
    const page = await context.newPage();
    await page.goto(consoleUrl);
    await page.getByLabel("Token").fill("not-a-real-token");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("did not accept this token");
    expect(await page.getByRole("navigation", { name: "Pages" }).count()).toBe(0);
    await page.close();
  });

  it("a channel owner creates a channel, copies its key, and the key chats through the ingress", async () => {
    const page = await context.newPage();
    const problems = recordProblems(page);
    await signIn(page, consoleUrl, token);
    await createChannelOnPage(page).catch(async (err) => {
      throw await problems.explain(err);
    });
    const shown = page.getByTestId("key-value");
    await page.getByRole("button", { name: "Copy the key" }).click();
    await expect.poll(() => page.getByRole("button", { name: "Copy the key" }).textContent()).toBe("Copied");
    const key = await page.evaluate(() => navigator.clipboard.readText());
    expect(key).toMatch(/^cap_chat_/);
    expect(key).toBe(await shown.textContent());

    // The gateway learns a new key from the API server within moments: 401 until then.
    const answered = await eventually(
      "the copied key to chat through the ingress",
      async () => {
        const res = await chat(key);
        if (res.status === 401) return undefined;
        return res;
      },
      120_000,
    );
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);
    const choices = answered.body.choices as { message: { content: string } }[];
    expect(choices[0]?.message.content).toMatch(/429|Retry-After/);

    // Deleting the channel on the page ends its key.
    await page.getByRole("button", { name: "I have copied the key" }).click();
    await page.getByRole("tab", { name: "Settings" }).click();
    page.once("dialog", (dialog) => void dialog.accept());
    await page.getByRole("button", { name: "Delete channel" }).click();
    await eventually("the channel gone", async () =>
      (await get(kube, "AccessChannel", CR, CHANNEL, DEMO_NS)) ? undefined : true,
    );
    await eventually("the deleted channel's key refused", async () =>
      (await chat(key)).status === 401 ? true : undefined,
    );
    await page.close();
  });
});
