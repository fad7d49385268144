// Helpers of the console's browser tests (users and sign-in are in test/ground/console-users.ts):
// the console built and listening on loopback, and
// screenshots (written into docs/console/ when UPDATE_SCREENSHOTS=1, else into a temporary folder).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildApp, buildFrontend, type ConsoleConfigInput, loadConsoleConfig } from "@capstan/console";
import { createLogger, createRegistry, listenInternal } from "@capstan/shared";
import { kubeConfigFromFile } from "@capstan/shared/kube";
import type { FastifyInstance } from "fastify";
import type { Page } from "playwright-core";
import { expect } from "vitest";

const DOCS = fileURLToPath(new URL("../../docs/console/", import.meta.url));

export interface RunningConsole {
  url: string;
  /** The internal port: /metrics, /healthz, /readyz (404 on `url`). */
  internalUrl: string;
  app: FastifyInstance;
  logs: string[];
  close(): Promise<void>;
}

let built: Promise<string> | undefined;
/** The frontend, built once per test file into a temporary folder. */
export function builtAssets(): Promise<string> {
  built ??= buildFrontend(mkdtempSync(join(tmpdir(), "capstan-console-")));
  return built;
}

export async function startConsole(
  kubeconfig: string,
  overrides: Partial<ConsoleConfigInput>,
): Promise<RunningConsole> {
  const logs: string[] = [];
  const logger = createLogger({ name: "console", level: "info", destination: { write: (l: string) => logs.push(l) } });
  const config = loadConsoleConfig({ assetsDir: await builtAssets(), ...overrides }, {});
  const app = await buildApp(config, {
    cluster: kubeConfigFromFile(kubeconfig),
    logger,
    registry: createRegistry({ defaultMetrics: false }),
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const addr = app.server.address() as { port: number };
  const internal = (await listenInternal(app, { port: 0, host: "127.0.0.1" })).address() as { port: number };
  return {
    url: `http://127.0.0.1:${addr.port}`,
    internalUrl: `http://127.0.0.1:${internal.port}`,
    app,
    logs,
    close: () => app.close(),
  };
}

const shots = process.env.UPDATE_SCREENSHOTS === "1" ? DOCS : mkdtempSync(join(tmpdir(), "capstan-console-shots-"));

/**
 * A full-page screenshot of the page as it is now, named for docs/console.md. `redact` (a key on
 * the page) is replaced in the page's text first, so no key, even a test one, lands in a picture.
 */
export async function screenshot(page: Page, name: string, redact?: string): Promise<void> {
  if (redact) {
    await page.evaluate((secret) => {
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (n.nodeValue?.includes(secret))
          n.nodeValue = n.nodeValue.replaceAll(secret, `${secret.slice(0, 13)}…(redacted)`);
      }
    }, redact);
  }
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

/** A request the page's own code would not send, made from inside the signed-in page (cookie and CSRF token). */
export async function forceFromPage(
  page: Page,
  method: string,
  path: string,
  body: unknown,
): Promise<{ status: number; body: { error?: { code: string; message: string } } }> {
  return page.evaluate(
    async ({ method, path, body }) => {
      const session = (await (await fetch("/api/session")).json()) as { csrfToken: string };
      const res = await fetch(path, {
        method,
        headers: { "content-type": "application/json", "x-csrf-token": session.csrfToken },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    },
    { method, path, body },
  );
}

/** Asks "Try a search" on a knowledge base's page and waits until the first hit holds `expected`. */
export async function trySearchFinds(page: Page, question: string, expected: string): Promise<void> {
  await page.getByLabel("Search text").fill(question);
  await page.getByRole("button", { name: "Search", exact: true }).click();
  await expect
    .poll(() => page.getByTestId("search-hit").first().textContent(), { timeout: 30_000 })
    .toContain(expected);
}
