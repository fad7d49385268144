import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ChainSecretResolver, EnvSecretResolver, envSecretName, FileSecretResolver } from "./secrets.ts";

const dir = mkdtempSync(join(tmpdir(), "gw-secrets-unit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("FileSecretResolver", () => {
  mkdirSync(join(dir, "team-a", "llm"), { recursive: true });
  mkdirSync(join(dir, "shared"), { recursive: true });
  writeFileSync(join(dir, "team-a", "llm", "apiKey"), "sk-namespaced\n");
  writeFileSync(join(dir, "shared", "apiKey"), "sk-flat");
  const r = new FileSecretResolver(dir);

  it("reads <dir>/<namespace>/<secret>/<key>, then <dir>/<secret>/<key>, trimming the newline", async () => {
    expect(await r.resolve("team-a", { name: "llm", key: "apiKey" })).toBe("sk-namespaced");
    expect(await r.resolve("team-b", { name: "shared", key: "apiKey" })).toBe("sk-flat");
    expect(await r.resolve("team-b", { name: "llm", key: "apiKey" })).toBeUndefined();
  });

  it("refuses names that could leave the folder", async () => {
    expect(await r.resolve("..", { name: "shared", key: "apiKey" })).toBeUndefined();
    expect(await r.resolve("x", { name: "../shared", key: "apiKey" })).toBeUndefined();
  });
});

describe("EnvSecretResolver and chain", () => {
  it("reads CAPSTAN_SECRET_<SECRET>_<KEY>", async () => {
    expect(envSecretName({ name: "openai-key", key: "api.key" })).toBe("CAPSTAN_SECRET_OPENAI_KEY_API_KEY");
    const env = new EnvSecretResolver({ CAPSTAN_SECRET_OPENAI_KEY_API_KEY: "sk-env" });
    const chain = new ChainSecretResolver([new FileSecretResolver(dir), env]);
    expect(await chain.resolve("ns", { name: "openai-key", key: "api.key" })).toBe("sk-env");
    expect(await chain.resolve("team-a", { name: "llm", key: "apiKey" })).toBe("sk-namespaced");
  });
});
