// scripts/images/bundle.mjs: what an image gets is a bundle that starts and serves, with only the
// packages it cannot bundle (and their dependencies) beside it.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain ES module without types (it runs in the image build, before any tsc).
import { bundle, packageClosure } from "./bundle.mjs";

const root = fileURLToPath(new URL("../../", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "capstan-bundle-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

/** Starts `node entry`, waits for GET url to answer 200 (or the process to exit), stops it. */
async function serves(entry: string, env: Record<string, string>, url: string): Promise<number> {
  const child = spawn(process.execPath, [entry], { env: { ...process.env, HOST: "127.0.0.1", ...env }, stdio: "pipe" });
  let output = "";
  child.stderr.on("data", (d) => {
    output += d;
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const status = await fetch(url).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) return status;
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${entry} did not serve ${url}: ${output}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    child.kill("SIGKILL");
    await exited;
  }
}

describe("bundle.mjs", () => {
  it("bundles the gateway: it serves, with only the external packages in node_modules", async () => {
    const out = join(scratch, "gateway");
    await bundle("gateway", out, root);
    const modules = readdirSync(join(out, "node_modules"));
    expect(modules).toContain("ioredis");
    // Everything else is inside the bundle.
    for (const bundled of ["fastify", "zod", "undici", "pino", "@kubernetes"]) expect(modules).not.toContain(bundled);
    const [port, internal] = [await freePort(), await freePort()];
    const status = await serves(
      join(out, "services/gateway/src/main.mjs"),
      { PORT: String(port), CAPSTAN_INTERNAL_PORT: String(internal), CAPSTAN_RESOURCES_DIR: join(root, "examples") },
      `http://127.0.0.1:${internal}/readyz`,
    );
    expect(status).toBe(200);
  }, 120_000);

  it("bundles the console: it serves", async () => {
    const out = join(scratch, "console");
    await bundle("console", out, root);
    const state = join(scratch, "console-state");
    mkdirSync(state);
    writeFileSync(join(scratch, "token"), "bundle-test-token\n");
    const [port, internal] = [await freePort(), await freePort()];
    const status = await serves(
      join(out, "console/src/main.mjs"),
      {
        PORT: String(port),
        CAPSTAN_INTERNAL_PORT: String(internal),
        CAPSTAN_CONSOLE_STANDALONE_RESOURCES_DIR: join(root, "examples"),
        CAPSTAN_CONSOLE_STANDALONE_STATE_DIR: state,
        CAPSTAN_CONSOLE_ADMIN_TOKEN_FILE: join(scratch, "token"),
      },
      `http://127.0.0.1:${internal}/readyz`,
    );
    expect(status).toBe(200);
  }, 120_000);

  it("writes only ASCII, so V8 keeps each module's source as a one-byte string", async () => {
    // The scraper's permalink pattern holds 🔗 and ⚓, the PDF layout's bullets •, ●, ▪...
    const out = join(scratch, "scraper");
    await bundle("scraper", out, root);
    const dir = join(out, "services/scraper/src");
    for (const f of readdirSync(dir)) expect(readFileSync(join(dir, f), "utf8")).not.toMatch(/[\u0080-\uffff]/);
  }, 120_000);

  it("writes the search's embedding worker beside its main module", async () => {
    const out = join(scratch, "search");
    await bundle("search", out, root);
    for (const f of ["main.mjs", "embed-worker.mjs", "local.mjs", "model-files.mjs"]) {
      expect(existsSync(join(out, "services/search/src", f))).toBe(true);
    }
    expect(readdirSync(join(out, "node_modules"))).toEqual(expect.arrayContaining(["onnxruntime-node", "usearch"]));
  }, 120_000);

  it("copies an external package's dependencies, nested ones where npm nested them", () => {
    const fake = join(scratch, "closure");
    const pkg = (
      dir: string,
      name: string,
      deps: Record<string, string> = {},
      optional: Record<string, string> = {},
    ) => {
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, "package.json"),
        JSON.stringify({ name, dependencies: deps, optionalDependencies: optional }),
      );
    };
    pkg(fake, "root");
    pkg(join(fake, "node_modules/a"), "a", { b: "1", c: "1" }, { "other-platform": "1" });
    pkg(join(fake, "node_modules/b"), "b");
    pkg(join(fake, "node_modules/a/node_modules/c"), "c");
    pkg(join(fake, "node_modules/unrelated"), "unrelated");
    expect(packageClosure(fake, ["a"]).map((d: string) => d.slice(fake.length + 1))).toEqual([
      "node_modules/a",
      "node_modules/a/node_modules/c",
      "node_modules/b",
    ]);
    pkg(join(fake, "node_modules/d"), "d", { missing: "1" });
    expect(() => packageClosure(fake, ["d"])).toThrow(/missing \(needed by node_modules\/d\) is not installed/);
  });
});
