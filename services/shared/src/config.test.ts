import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError, envParsers, loadConfig } from "./config.ts";

const schema = z.object({
  port: z.int().min(1).max(65535).default(8080),
  redis: z
    .object({ url: z.string().optional(), timeoutMs: z.int().positive().default(500) })
    .default({ timeoutMs: 500 }),
  auth: z.boolean().default(false),
  engines: z.array(z.string()).default([]),
});
const envMap = {
  PORT: { path: "port", parse: envParsers.int },
  REDIS_URL: "redis.url",
  AUTH_ENABLED: { path: "auth", parse: envParsers.bool },
  ENGINES: { path: "engines", parse: envParsers.list },
};

describe("loadConfig", () => {
  it("applies defaults, then the file, then the environment", () => {
    const dir = mkdtempSync(join(tmpdir(), "capstan-config-"));
    const file = join(dir, "config.yaml");
    writeFileSync(file, "port: 9000\nredis:\n  url: redis://file:6379\n");
    const cfg = loadConfig(schema, { file, envMap, env: { REDIS_URL: "redis://env:6379", ENGINES: "a, b,,c" } });
    expect(cfg).toEqual({
      port: 9000,
      redis: { url: "redis://env:6379", timeoutMs: 500 },
      auth: false,
      engines: ["a", "b", "c"],
    });
  });

  it("fails fast naming every bad field and the variable it came from", () => {
    let error: unknown;
    try {
      loadConfig(schema, { envMap, env: { PORT: "eighty", AUTH_ENABLED: "maybe" } });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain("port (PORT)");
    expect(message).toContain("auth (AUTH_ENABLED)");
  });

  it("treats an empty or blank variable as unset: the file's value and the default stay", () => {
    const dir = mkdtempSync(join(tmpdir(), "capstan-config-"));
    const file = join(dir, "config.yaml");
    writeFileSync(file, "redis:\n  url: redis://file:6379\n");
    const cfg = loadConfig(schema, { file, envMap, env: { REDIS_URL: "", PORT: " ", AUTH_ENABLED: "" } });
    expect(cfg.redis.url).toBe("redis://file:6379");
    expect(cfg.port).toBe(8080);
    expect(cfg.auth).toBe(false);
  });

  it("reports an unreadable file clearly", () => {
    expect(() => loadConfig(schema, { file: "/nonexistent/capstan.yaml" })).toThrow(/cannot read config file/);
  });
});

describe("unknown keys", () => {
  it("fail the load, naming the key and the nearest valid one", () => {
    const dir = mkdtempSync(join(tmpdir(), "capstan-config-"));
    const file = join(dir, "config.yaml");
    writeFileSync(file, "prot: 9000\nredis:\n  timeoutMS: 5\n");
    expect(() => loadConfig(schema, { file })).toThrowError(
      /prot: unknown key \(did you mean port\?\)\n {2}redis\.timeoutMS: unknown key \(did you mean redis\.timeoutMs\?\)/,
    );
  });

  it("are found under defaults, optional objects and in arrays of objects", () => {
    const nested = z.object({
      items: z.array(z.object({ name: z.string() })).default([]),
      open: z.record(z.string(), z.string()).default({}),
    });
    expect(() => loadConfig(nested, { overrides: { items: [{ name: "a", nmae: "b" }], open: { any: "x" } } })).toThrow(
      /items\[0\]\.nmae: unknown key \(did you mean items\[0\]\.name\?\)/,
    );
    expect(loadConfig(nested, { overrides: { open: { anything: "goes" } } }).open).toEqual({ anything: "goes" });
  });
});
