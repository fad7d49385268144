import { ConfigError } from "@capstan/shared";
import { describe, expect, it } from "vitest";
import { configWarnings, loadScraperConfig } from "./config.ts";

describe("loadScraperConfig", () => {
  it("has the reference defaults", () => {
    const cfg = loadScraperConfig({});
    expect(cfg).toMatchObject({
      port: 3002,
      logLevel: "info",
      blockMedia: false,
      maxConcurrentRequests: 10,
      requestTimeoutMs: 30_000,
      workerConcurrency: 5,
      taskTimeoutMs: 60_000,
      authEnabled: false,
      chromiumPath: "/usr/lib/chromium/chromium-headless-shell",
      renderPort: 3000,
      renderUrl: "http://127.0.0.1:3000",
      allowedHosts: [],
      search: { engines: ["google", "bing", "duckduckgo"], categories: ["general"] },
      llm: { baseURL: "https://api.openai.com/v1", model: "gpt-4o-mini", embeddingModel: "text-embedding-3-small" },
    });
  });

  it("reads every variable of the environment table", () => {
    const cfg = loadScraperConfig({
      PORT: "4000",
      INTERNAL_PORT: "4001",
      ADMIN_PORT: "4003",
      LOGGING_LEVEL: "DEBUG",
      LLM_API_KEY: "sk-test",
      LLM_BASE_URL: "http://llm.local/v1",
      MODEL_NAME: "small",
      MODEL_EMBEDDING_NAME: "embed",
      LOCAL_MODEL_BASE_URL: "http://127.0.0.1:11434/v1",
      SEARCH_ENDPOINT: "http://searx.local",
      SEARCH_ENGINES: "a, b",
      SEARCH_CATEGORIES: "news",
      PROXY_SERVER: "http://proxy:3128",
      PROXY_USERNAME: "u",
      PROXY_PASSWORD: "p",
      BLOCK_MEDIA: "true",
      MAX_CONCURRENT_REQUESTS: "20",
      REQUEST_TIMEOUT: "15000",
      WORKER_CONCURRENCY: "3",
      TASK_TIMEOUT: "90000",
      API_KEY: "cap_scr_abcdefgh",
      AUTH_ENABLED: "true",
      CHROMIUM_PATH: "/opt/chromium",
      RENDER_PORT: "0",
      RENDER_URL: "http://render:3000",
      SCRAPER_ALLOWED_HOSTS: "10.0.0.0/8, docs.internal",
    });
    expect(cfg).toMatchObject({
      port: 4000,
      internalPort: 4001,
      adminPort: 4003,
      logLevel: "debug",
      llm: { apiKey: "sk-test", model: "small", embeddingModel: "embed" },
      search: { endpoint: "http://searx.local", engines: ["a", "b"], categories: ["news"] },
      proxy: { server: "http://proxy:3128", username: "u", password: "p" },
      blockMedia: true,
      maxConcurrentRequests: 20,
      requestTimeoutMs: 15_000,
      workerConcurrency: 3,
      taskTimeoutMs: 90_000,
      authEnabled: true,
      renderPort: 0,
      allowedHosts: ["10.0.0.0/8", "docs.internal"],
    });
  });

  it("names every bad variable in one error", () => {
    let err: unknown;
    try {
      loadScraperConfig({ PORT: "abc", BLOCK_MEDIA: "maybe", SEARCH_ENDPOINT: "ftp://x" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as Error).message;
    expect(message).toContain("(PORT)");
    expect(message).toContain("(BLOCK_MEDIA)");
    expect(message).toContain("(SEARCH_ENDPOINT)");
  });

  it("leaves Chromium's sandbox to the process's user unless CHROMIUM_SANDBOX says", () => {
    expect(loadScraperConfig({}).chromiumSandbox).toBeUndefined();
    expect(loadScraperConfig({ CHROMIUM_SANDBOX: "false" }).chromiumSandbox).toBe(false);
    expect(loadScraperConfig({ CHROMIUM_SANDBOX: "true" }).chromiumSandbox).toBe(true);
    expect(() => loadScraperConfig({ CHROMIUM_SANDBOX: "maybe" })).toThrow(/CHROMIUM_SANDBOX/);
  });

  it("requires API_KEY when AUTH_ENABLED=true", () => {
    expect(() => loadScraperConfig({ AUTH_ENABLED: "true" })).toThrow(/apiKey \(API_KEY\): API_KEY is required/);
  });

  it("accepts any non-empty API_KEY, the reference's own `secret` included, and warns about a short one", () => {
    const config = loadScraperConfig({ API_KEY: "secret", AUTH_ENABLED: "true" });
    expect(config).toMatchObject({ apiKey: "secret", authEnabled: true });
    expect(configWarnings(config)).toEqual([expect.stringContaining("API_KEY is shorter than 16 characters")]);
    expect(configWarnings(loadScraperConfig({ API_KEY: "a-long-random-key-0123456789" }))).toEqual([]);
    expect(configWarnings(loadScraperConfig({}))).toEqual([]);
  });

  it("refuses an unknown SCRAPER_, CHROMIUM_ or RENDER_ variable, naming it and the nearest one it reads", () => {
    expect(() => loadScraperConfig({ SCRAPER_ALLOWED_HOST: "docs.internal" })).toThrow(
      /SCRAPER_ALLOWED_HOST: unknown variable \(did you mean SCRAPER_ALLOWED_HOSTS\?\)/,
    );
    expect(() => loadScraperConfig({ RENDER_PROT: "3000" })).toThrow(/did you mean RENDER_PORT\?/);
    // The reference's own names have no common prefix and still work, beside the shell's variables.
    const cfg = loadScraperConfig({
      API_KEY: "cap_scr_abcdefgh",
      AUTH_ENABLED: "true",
      PORT: "3002",
      SCRAPER_ROLE: "api",
      HOME: "/tmp",
      NODE_ENV: "production",
    });
    expect(cfg).toMatchObject({ apiKey: "cap_scr_abcdefgh", authEnabled: true, port: 3002 });
  });

  it("treats empty variables as unset", () => {
    expect(loadScraperConfig({ API_KEY: "", PROXY_SERVER: "" }).proxy.server).toBeUndefined();
  });
});
