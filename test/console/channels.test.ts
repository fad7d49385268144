// The console in a real browser (Debian's Chromium through playwright-core) against the test
// ground's real API server (RBAC on), a real operator and a real gateway watching that API server:
// a channel owner signs in with a ServiceAccount token, creates an access channel, adds its key
// (issued by the operator, shown once) and the key works with the openai SDK; rotation retires it;
// a read-only viewer sees no "Add key" and, forcing the requests, gets the API server's refusal.

import OpenAI from "openai";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { RunningGateway } from "../gateway/helpers.ts";
import { launchChromium } from "../ground/chromium.ts";
import { signIn, tokenWithRoles } from "../ground/console-users.ts";
import type { TestKube } from "../ground/kube-client.ts";
import { eventually } from "../operator/helpers.ts";
import { type ChatPlane, startChatPlane } from "./chat-plane.ts";
import { forceFromPage, type RunningConsole, screenshot, startConsole } from "./helpers.ts";

const ns = `console-${process.pid}-${Date.now().toString(36)}`;
let plane: ChatPlane;
let admin: TestKube;
let gateway: RunningGateway;
let consoleApp: RunningConsole;
let browser: Browser;
const tokens: Record<string, string> = {};
let key = "";

const chat = (apiKey: string) =>
  new OpenAI({ baseURL: `${gateway.url}/api/v1`, apiKey, maxRetries: 0, timeout: 30_000 }).chat.completions.create({
    model: "any",
    messages: [{ role: "user", content: "hello from the console test" }],
  });

/** Waits until the gateway's view of the API server holds the channel's current key hash. */
const gatewayAccepts = (apiKey: string) =>
  eventually("the gateway to accept the key", async () => {
    try {
      return (await chat(apiKey)).choices[0]?.message.content ?? undefined;
    } catch (err) {
      if (err instanceof OpenAI.AuthenticationError) return undefined;
      throw err;
    }
  });

beforeAll(async () => {
  // The channels' status.endpoint (shown in the snippets) is this gateway.
  plane = await startChatPlane(ns);
  ({ admin, gateway } = plane);
  tokens.owner = await tokenWithRoles(admin, ns, "owner", ["channel-owner"]);
  tokens.viewer = await tokenWithRoles(admin, ns, "viewer", ["viewer"]);
  consoleApp = await startConsole(inject("kubeconfig"), {
    defaultNamespace: ns,
    gatewayUrl: gateway.url,
    gatewayMetricsUrls: [`${gateway.internalUrl}/metrics`],
  });
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await consoleApp?.close();
  await plane?.close();
});

describe("access channels in the console", () => {
  it("refuses a token the API server does not accept, in words", async () => {
    const page = await browser.newPage();
    await page.goto(consoleApp.url);
    await screenshot(page, "sign-in");
    await page.getByLabel("Token").fill("not-a-real-token");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("did not accept this token");
    await page.close();
  });

  it("a channel owner creates a channel, adds its key, and the key works with the openai SDK", async () => {
    const page = await browser.newPage();
    await signIn(page, consoleApp.url, tokens.owner as string);
    await page.getByRole("button", { name: "New channel" }).click();
    await page.getByLabel("Resource name").fill("support-bot");
    await page.getByLabel("Channel name").fill("Support bot");
    await page.getByLabel("Agent").selectOption("echo");
    await page.getByLabel("Rate limit (requests per minute)").fill("120");
    await screenshot(page, "channel-new");
    await page.getByRole("button", { name: "Create channel" }).click();
    await page.getByRole("heading", { name: "Support bot" }).waitFor();
    await page.getByRole("button", { name: "Add key" }).click();
    const shown = page.getByTestId("key-value");
    await shown.waitFor({ timeout: 60_000 });
    key = (await shown.textContent()) ?? "";
    expect(key).toMatch(/^cap_chat_/);
    await expect.poll(() => page.locator("pre code").first().textContent()).toContain(`Bearer ${key}`);
    // The key is the one the operator issued into the channel's Secret.
    const secret = await admin.json<{ data: { key: string } }>(`/api/v1/namespaces/${ns}/secrets/support-bot-chat-key`);
    expect(Buffer.from(secret.data.key, "base64").toString()).toBe(key);
    expect(await gatewayAccepts(key)).toContain("hello from the console test");
    // Never in a log line.
    expect(consoleApp.logs.join("\n")).not.toContain(key);
    await screenshot(page, "channel-key", key);

    await page.getByRole("button", { name: "I have copied the key" }).click();
    await page.getByRole("button", { name: "Rotate key" }).waitFor();
    expect(await page.getByRole("button", { name: "Add key" }).count()).toBe(0);
    await page.goto(`${consoleApp.url}/#/channels`);
    await page.getByRole("link", { name: "Support bot" }).waitFor();
    await screenshot(page, "channels");
    await page.close();
  });

  it("drops a late answer for a namespace the user has left: the page keeps the current one's permissions", async () => {
    const page = await browser.newPage();
    // The owner may do nothing in `elsewhere`; its permissions answer comes 1.5 s late (a slow or retried read).
    const elsewhere = `${ns}-elsewhere`;
    await page.route(`**/api/namespaces/${elsewhere}/permissions`, async (route) => {
      await new Promise((r) => setTimeout(r, 1_500));
      await route.continue();
    });
    await signIn(page, consoleApp.url, tokens.owner as string);
    await page.getByRole("button", { name: "New channel" }).waitFor();
    const late = page.waitForResponse((r) => r.url().includes(`/namespaces/${elsewhere}/permissions`));
    for (const target of [elsewhere, ns]) {
      await page.getByLabel("Namespace").fill(target);
      await page.getByRole("button", { name: "Switch" }).click();
    }
    await page.getByRole("heading", { name: `Access channels in ${ns}` }).waitFor();
    await page.getByRole("button", { name: "New channel" }).waitFor();
    expect((await late).status()).toBe(200);
    // Whatever the late answer would change is rendered within moments of it.
    await page.waitForTimeout(500);
    expect(await page.getByRole("heading", { name: `Access channels in ${ns}` }).count()).toBe(1);
    expect(await page.getByRole("button", { name: "New channel" }).count()).toBe(1);
    await page.close();
  });

  it("rotating the key issues a new one; the old one is refused", async () => {
    const page = await browser.newPage();
    await signIn(page, consoleApp.url, tokens.owner as string);
    await page.goto(`${consoleApp.url}/#/channels/support-bot`);
    await page.getByRole("button", { name: "Rotate key" }).click();
    const shown = page.getByTestId("key-value");
    await shown.waitFor({ timeout: 60_000 });
    const rotated = (await shown.textContent()) ?? "";
    expect(rotated).toMatch(/^cap_chat_/);
    expect(rotated).not.toBe(key);
    expect(await gatewayAccepts(rotated)).toContain("hello");
    await expect(chat(key)).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    await page.close();
  });

  it("edits QPM and expiry with the CRD's validation", async () => {
    const page = await browser.newPage();
    await signIn(page, consoleApp.url, tokens.owner as string);
    await page.goto(`${consoleApp.url}/#/channels/support-bot`);
    await page.getByRole("tab", { name: "Settings" }).click();
    await page.getByLabel("Rate limit (requests per minute)").fill("0");
    // The browser's own check stops 0; the console's zod check answers a value the form lets through.
    const refused = await forceFromPage(page, "PATCH", `/api/namespaces/${ns}/accesschannels/support-bot`, { qpm: 0 });
    expect(refused.status).toBe(422);
    expect(refused.body.error?.message).toContain("qpm");
    await page.getByLabel("Rate limit (requests per minute)").fill("30");
    await page.getByRole("button", { name: "Save" }).click();
    await eventually("qpm 30", async () => {
      const ch = await admin.json<{ spec: { qpm: number } }>(
        `/apis/capstan.dev/v1alpha1/namespaces/${ns}/accesschannels/support-bot`,
      );
      return ch.spec.qpm === 30 ? true : undefined;
    });
    await screenshot(page, "channel-settings");
    await page.close();
  });

  it("a read-only viewer sees no Add key and gets the API server's refusal when forcing it", async () => {
    const page = await browser.newPage();
    await signIn(page, consoleApp.url, tokens.viewer as string);
    await page.getByRole("link", { name: "Support bot" }).waitFor();
    expect(await page.getByRole("button", { name: "New channel" }).count()).toBe(0);
    await page.getByRole("link", { name: "Support bot" }).click();
    await page.getByRole("heading", { name: "Support bot" }).waitFor();
    expect(await page.getByRole("button", { name: /Add key|Rotate key/ }).count()).toBe(0);
    await screenshot(page, "channel-viewer");

    const reveal = await forceFromPage(page, "POST", `/api/namespaces/${ns}/accesschannels/support-bot/key`, {});
    expect(reveal.status).toBe(403);
    expect(reveal.body.error?.message).toMatch(/cannot (get|delete) resource "secrets"/);
    const createIt = await forceFromPage(page, "POST", `/api/namespaces/${ns}/accesschannels`, {
      name: "sneaky",
      spec: { channelName: "sneaky", agentRef: { name: "echo" } },
    });
    expect(createIt.status).toBe(403);
    expect(createIt.body.error?.message).toMatch(/cannot create resource "accesschannels"/);
    await page.close();
  });

  it("the usage page shows the requests just made, per channel", async () => {
    const page = await browser.newPage();
    await signIn(page, consoleApp.url, tokens.viewer as string);
    await page.goto(`${consoleApp.url}/#/usage`);
    const row = page.getByTestId("usage-support-bot");
    await row.waitFor();
    // Two chats answered with the channel's keys (the first key, then the rotated one), at least.
    const requests = Number(await row.locator("td").first().textContent());
    expect(requests).toBeGreaterThanOrEqual(2);
    expect(Number(await row.locator("td").nth(2).textContent())).toBeGreaterThan(0);
    await chat(
      await eventually("the current key", async () => {
        const secret = await admin.json<{ data: { key: string } }>(
          `/api/v1/namespaces/${ns}/secrets/support-bot-chat-key`,
        );
        return Buffer.from(secret.data.key, "base64").toString();
      }),
    );
    await expect
      .poll(
        async () => {
          await page.getByRole("button", { name: "Refresh" }).click();
          return Number(await row.locator("td").first().textContent());
        },
        { timeout: 30_000, interval: 1_000 },
      )
      .toBe(requests + 1);
    await page.getByRole("figure", { name: "Requests" }).waitFor();
    await screenshot(page, "usage");
    await page.close();
  });

  it("changes need the session's CSRF token; the pages carry a strict Content-Security-Policy", async () => {
    const page = await browser.newPage();
    await signIn(page, consoleApp.url, tokens.owner as string);
    const status = await page.evaluate(async (path) => {
      const res = await fetch(path, { method: "DELETE" });
      return res.status;
    }, `/api/namespaces/${ns}/accesschannels/support-bot`);
    expect(status).toBe(403);
    const res = await fetch(consoleApp.url);
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === "capstan_console_session");
    expect(session?.httpOnly).toBe(true);
    expect(session?.sameSite).toBe("Strict");
    // The channel is still there.
    const ch = await admin.json<{ metadata: { name: string } }>(
      `/apis/capstan.dev/v1alpha1/namespaces/${ns}/accesschannels/support-bot`,
    );
    expect(ch.metadata.name).toBe("support-bot");
    await page.close();
  });
});
