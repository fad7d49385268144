// For the console's in-process tests: a standalone console (its YAML folder the API) over a
// temporary folder holding `yaml` (demo/handbook unless told), built as production builds it,
// signed in as the local admin, and driven with Fastify's inject().
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, createRegistry } from "@capstan/shared";
import type { FastifyInstance } from "fastify";
import { buildApp } from "./app.ts";
import { loadConsoleConfig } from "./config.ts";

/** One knowledge base, demo/handbook, with one inline source: what most tests start from. */
export const HANDBOOK_YAML = `apiVersion: capstan.dev/v1alpha1
kind: KnowledgeBase
metadata: {name: handbook, namespace: demo}
spec:
  sources:
    - {name: intro, text: "Welcome."}
`;

const ADMIN_TOKEN = "local-admin-token-0123456789";

export interface TestConsole {
  app: FastifyInstance;
  /** The folder of resources the console reads and writes. */
  resourcesDir: string;
  /** The session cookie (`name=value`) and its CSRF token. */
  cookie: string;
  csrf: string;
  /** The sign-in's answer, as the console sent it. */
  signIn: unknown;
}

/** The console over a temporary folder holding `yaml`, built but not started (routes may still be added). */
export async function buildTestConsole(yaml = HANDBOOK_YAML): Promise<{ app: FastifyInstance; resourcesDir: string }> {
  const dir = mkdtempSync(join(tmpdir(), "capstan-console-test-"));
  const resourcesDir = join(dir, "resources");
  const stateDir = join(dir, "state");
  for (const d of [resourcesDir, join(stateDir, "resources")]) mkdirSync(d, { recursive: true });
  writeFileSync(join(resourcesDir, "demo.yaml"), yaml);
  writeFileSync(join(dir, "admin-token"), ADMIN_TOKEN);
  const config = loadConsoleConfig(
    {
      assetsDir: join(dir, "no-frontend"),
      standaloneResourcesDir: resourcesDir,
      standaloneStateDir: stateDir,
      adminTokenFile: join(dir, "admin-token"),
    },
    {},
  );
  const app = await buildApp(config, {
    logger: createLogger({ name: "console-test", level: "silent" }),
    registry: createRegistry({ defaultMetrics: false }),
  });
  return { app, resourcesDir };
}

/** The console over a temporary folder holding `yaml`, signed in as the local admin. */
export async function startTestConsole(yaml = HANDBOOK_YAML): Promise<TestConsole> {
  const { app, resourcesDir } = await buildTestConsole(yaml);
  const signedIn = await app.inject({ method: "POST", url: "/api/session", payload: { token: ADMIN_TOKEN } });
  if (signedIn.statusCode !== 200) throw new Error(`sign-in answered ${signedIn.statusCode}: ${signedIn.body}`);
  const cookie = String(signedIn.headers["set-cookie"]).split(";")[0] as string;
  return { app, resourcesDir, cookie, csrf: signedIn.json().csrfToken, signIn: signedIn.json() };
}
