// Helpers of the console's browser tests: ServiceAccounts bound to the Roles that docs/console.md
// shows (their tokens are how users sign in), the console built and listening on loopback, and
// screenshots (written into docs/console/ when UPDATE_SCREENSHOTS=1, else into a temporary folder).
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildApp, buildFrontend, type ConsoleConfigInput, loadConsoleConfig } from "@capstan/console";
import { createLogger, createRegistry, listenInternal } from "@capstan/shared";
import { kubeConfigFromFile } from "@capstan/shared/kube";
import type { FastifyInstance } from "fastify";
import type { Page } from "playwright-core";
import { expect } from "vitest";
import { parse } from "yaml";
import type { TestKube } from "../ground/kube-client.ts";
import { create, type Obj } from "../operator/helpers.ts";

const DOCS = fileURLToPath(new URL("../../docs/console/", import.meta.url));

/** A ServiceAccount bound in `ns` to the Roles of docs/console/rbac/<role>.yaml; returns its token. */
export function tokenWithRoles(admin: TestKube, ns: string, name: string, roles: string[]): Promise<string> {
  const objects = roles.map((role) => parse(readFileSync(join(DOCS, "rbac", `${role}.yaml`), "utf8")) as Obj);
  return tokenWithRoleObjects(admin, ns, name, objects);
}

/** A ServiceAccount bound in `ns` to these Roles (made in `ns`); returns its token. */
export async function tokenWithRoleObjects(admin: TestKube, ns: string, name: string, roles: Obj[]): Promise<string> {
  await create(admin, { apiVersion: "v1", kind: "ServiceAccount", metadata: { name, namespace: ns } });
  for (const role of roles) {
    const roleObj = { ...role, metadata: { ...role.metadata, namespace: ns } } as Obj;
    await admin
      .json(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, { method: "POST", body: roleObj })
      .catch((err: { status?: number }) => {
        if (err.status !== 409) throw err;
      });
    await admin.json(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
      method: "POST",
      body: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: `${name}-${roleObj.metadata.name}`, namespace: ns },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: roleObj.metadata.name },
        subjects: [{ kind: "ServiceAccount", name, namespace: ns }],
      },
    });
  }
  const tr = await admin.json<{ status: { token: string } }>(`/api/v1/namespaces/${ns}/serviceaccounts/${name}/token`, {
    method: "POST",
    body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 3600 } },
  });
  return tr.status.token;
}

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

/** Signs in through the sign-in form and waits for the navigation bar. */
export async function signIn(page: Page, url: string, token: string): Promise<void> {
  await page.goto(url);
  await page.getByLabel("Token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Pages" }).waitFor();
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
