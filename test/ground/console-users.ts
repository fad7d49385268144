// How a user meets the console, shared by the console's browser tests (a console process on
// loopback) and the e2e test (the chart's console through the ingress): a ServiceAccount bound to
// the Roles docs/console.md shows, whose token is what the user signs in with, and the sign-in form.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { parse } from "yaml";
import type { TestKube } from "./kube-client.ts";

const RBAC = fileURLToPath(new URL("../../docs/console/rbac/", import.meta.url));

interface RoleObject {
  metadata: { name: string; namespace?: string };
  [field: string]: unknown;
}

/** A ServiceAccount bound in `ns` to the Roles of docs/console/rbac/<role>.yaml; returns its token. */
export function tokenWithRoles(admin: TestKube, ns: string, name: string, roles: string[]): Promise<string> {
  const objects = roles.map((role) => parse(readFileSync(join(RBAC, `${role}.yaml`), "utf8")) as RoleObject);
  return tokenWithRoleObjects(admin, ns, name, objects);
}

/** A ServiceAccount bound in `ns` to these Roles (made in `ns`, kept when they exist); returns its token. */
export async function tokenWithRoleObjects(
  admin: TestKube,
  ns: string,
  name: string,
  roles: RoleObject[],
): Promise<string> {
  await admin.json(`/api/v1/namespaces/${ns}/serviceaccounts`, {
    method: "POST",
    body: { apiVersion: "v1", kind: "ServiceAccount", metadata: { name, namespace: ns } },
  });
  for (const role of roles) {
    const roleObj = { ...role, metadata: { ...role.metadata, namespace: ns } };
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

/** Signs in through the sign-in form and waits for the navigation bar. */
export async function signIn(page: Page, url: string, token: string): Promise<void> {
  await page.goto(url);
  await page.getByLabel("Token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Pages" }).waitFor();
}

/**
 * Records what went wrong on `page` as a user would not see it at once: the console API's failed
 * answers (method, path, status), requests that got no answer, and the page's console errors.
 * `explain(err)` adds them, with the alerts on the page, to a failed step's error.
 */
export function recordProblems(page: Page): { explain: (err: unknown) => Promise<Error> } {
  const seen: string[] = [];
  page.on("response", (res) => {
    if (res.status() >= 400) seen.push(`${res.request().method()} ${new URL(res.url()).pathname} → ${res.status()}`);
  });
  page.on("requestfailed", (req) => {
    seen.push(`${req.method()} ${new URL(req.url()).pathname} → no answer (${req.failure()?.errorText})`);
  });
  page.on("console", (msg) => {
    if (msg.type() === "error") seen.push(`console error: ${msg.text()}`);
  });
  return {
    explain: async (err) => {
      const alerts = await page
        .getByRole("alert")
        .allTextContents()
        .catch(() => []);
      const lines = [...seen, ...alerts.map((a) => `alert on the page: ${a}`)];
      return new Error(`${(err as Error).message}\nwhat the page met:\n${lines.join("\n") || "(nothing)"}`);
    },
  };
}
