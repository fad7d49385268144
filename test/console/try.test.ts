// "Try a chat" and "try a scrape" in a real browser (Debian's Chromium through playwright-core)
// against the test ground's API server (RBAC on), a real operator issuing the channel's key, a
// real gateway (a fake provider speaking the OpenAI protocol behind it) and a real scraper with
// its rendering service. A channel owner chats through a channel they pick and scrapes a page of
// a loopback site; a viewer, who may not read Secrets, gets the API server's refusal in words.
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { FakeOpenAI } from "../gateway/fake-openai.ts";
import type { RunningGateway } from "../gateway/helpers.ts";
import { launchChromium } from "../ground/chromium.ts";
import { signIn, tokenWithRoles } from "../ground/console-users.ts";
import type { TestKube } from "../ground/kube-client.ts";
import { CAP, create, whenCondition } from "../operator/helpers.ts";
import { type Scraper, type Site, startScraper, startSite } from "../scraper/helpers.ts";
import { type ChatPlane, startChatPlane } from "./chat-plane.ts";
import { type RunningConsole, screenshot, startConsole } from "./helpers.ts";

const ns = `console-try-${process.pid}-${Date.now().toString(36)}`;
const SCRAPER_KEY = "scraper-test-key-0123456789";
let plane: ChatPlane;
let admin: TestKube;
let fake: FakeOpenAI;
let gateway: RunningGateway;
let scraper: Scraper;
let site: Site;
let consoleApp: RunningConsole;
let browser: Browser;
const tokens: Record<string, string> = {};

beforeAll(async () => {
  plane = await startChatPlane(ns);
  ({ admin, fake, gateway } = plane);
  site = await startSite();
  site.route(
    "/release-notes",
    "<html><head><title>Release notes</title></head><body><main><h1>Release 4.2</h1>" +
      "<p>Channels now rotate their keys from the console.</p></main></body></html>",
  );
  scraper = await startScraper({ allowedHosts: [`127.0.0.1:${site.port}`], authEnabled: true, apiKey: SCRAPER_KEY });
  await create(admin, {
    apiVersion: CAP,
    kind: "AccessChannel",
    metadata: { name: "helpdesk", namespace: ns },
    spec: { channelName: "Helpdesk", agentRef: { name: "echo" } },
  });
  await create(admin, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "pages-key", namespace: ns },
    stringData: { apiKey: SCRAPER_KEY },
  });
  // The platform calls this scraper at spec.client.url (here the loopback scraper); its API key is the Secret's.
  await create(admin, {
    apiVersion: CAP,
    kind: "Scraper",
    metadata: { name: "pages", namespace: ns },
    spec: {
      auth: { enabled: true, apiKeySecretRef: { name: "pages-key", key: "apiKey" } },
      client: { url: scraper.url },
    },
  });
  await whenCondition(admin, "AccessChannel", ns, "helpdesk", "Ready", "True");
  tokens.owner = await tokenWithRoles(admin, ns, "owner", ["channel-owner"]);
  tokens.viewer = await tokenWithRoles(admin, ns, "viewer", ["viewer"]);
  consoleApp = await startConsole(inject("kubeconfig"), { defaultNamespace: ns, gatewayUrl: gateway.url });
  browser = await launchChromium();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await consoleApp?.close();
  await scraper?.close();
  await site?.close();
  await plane?.close();
});

describe("try a chat and try a scrape", () => {
  it("a channel owner chats with an agent through the real gateway, with the channel picked", async () => {
    const page = await browser.newPage();
    await signIn(page, consoleApp.url, tokens.owner as string);
    await page.getByRole("link", { name: "Agents" }).click();
    await page.locator("summary", { hasText: "echo" }).click();
    const form = page.getByRole("form", { name: "Try a chat" });
    await expect.poll(() => form.getByLabel("Channel").inputValue()).toBe("helpdesk");
    await form.getByLabel("Message").fill("Which plan includes priority support?");
    await form.getByRole("button", { name: "Send" }).click();
    const answer = page.getByTestId("chat-answer");
    // The gateway may not have seen the new key's hash yet: the refusal is shown, and a resend works.
    for (let i = 0; i < 20 && !(await answer.isVisible()); i++) {
      await page.waitForTimeout(250);
      if (await page.getByRole("alert").isVisible()) await form.getByRole("button", { name: "Send" }).click();
    }
    await expect
      .poll(() => answer.textContent(), { timeout: 30_000 })
      .toContain("echo: Which plan includes priority support?");
    // It went through the gateway to the provider, as a client of the channel would.
    expect(fake.calls.at(-1)?.body.messages.at(-1)?.content).toBe("Which plan includes priority support?");
    await screenshot(page, "agent-try-chat");
    // The console's outbound call is measured like every other (on its internal port).
    const metrics = await (await fetch(`${consoleApp.internalUrl}/metrics`)).text();
    expect(metrics).toMatch(/capstan_console_outbound_requests_total\{target="gateway",outcome="ok"\} [1-9]/);
    await page.close();
  });

  it("a channel owner scrapes a page with the real scraper and sees its Markdown", async () => {
    const page = await browser.newPage();
    await signIn(page, consoleApp.url, tokens.owner as string);
    await page.getByRole("link", { name: "Agents" }).click();
    await page.locator("summary", { hasText: "pages" }).click();
    const form = page.getByRole("form", { name: "Try a scrape" });
    await form.getByLabel("URL").fill(`${site.origin}/release-notes`);
    await form.getByRole("button", { name: "Scrape" }).click();
    const markdown = page.getByTestId("scrape-markdown");
    await markdown.waitFor({ timeout: 60_000 });
    expect(await markdown.textContent()).toMatch(
      /# Release 4\.2[\s\S]*Channels now rotate their keys from the console\./,
    );
    expect(site.hits).toContain("/release-notes");
    await screenshot(page, "scraper-try-scrape");
    // A URL the scraper refuses comes back in its own words, not as a crash.
    await form.getByLabel("URL").fill("http://10.255.255.1/private");
    await form.getByRole("button", { name: "Scrape" }).click();
    await expect.poll(() => form.getByRole("alert").textContent(), { timeout: 60_000 }).toMatch(/the scraper: /);
    await page.close();
  });

  it("a viewer, who may not read Secrets, gets the API server's refusal in words", async () => {
    const page = await browser.newPage();
    await signIn(page, consoleApp.url, tokens.viewer as string);
    await page.getByRole("link", { name: "Agents" }).click();
    await page.locator("summary", { hasText: "echo" }).click();
    const form = page.getByRole("form", { name: "Try a chat" });
    await expect.poll(() => form.getByLabel("Channel").inputValue()).toBe("helpdesk");
    await form.getByLabel("Message").fill("hello");
    await form.getByRole("button", { name: "Send" }).click();
    await expect.poll(() => form.getByRole("alert").textContent()).toMatch(/secrets .* is forbidden/);
    await page.close();
  });
});
