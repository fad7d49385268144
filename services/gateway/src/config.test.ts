import { ConfigError } from "@capstan/shared";
import { describe, expect, it } from "vitest";
import { loadGatewayConfig } from "./config.ts";

describe("gateway config", () => {
  it("has the documented defaults", () => {
    const c = loadGatewayConfig({});
    expect(c).toMatchObject({ port: 8080, host: "0.0.0.0", resourcesDirs: [] });
    expect(c.redisUrl).toBeUndefined();
    expect(c.search.url).toBe("http://127.0.0.1:8081");
    expect(c.limiter).toMatchObject({ windowMs: 60_000, redisDownPolicy: "local" });
  });

  it("reads the environment", () => {
    const c = loadGatewayConfig({
      PORT: "9000",
      REDIS_URL: "redis://127.0.0.1:6379",
      CAPSTAN_RESOURCES_DIR: "/a, /b",
      CAPSTAN_SEARCH_URL: "http://search:8081",
      CAPSTAN_INTERNAL_TOKEN: "t",
      CAPSTAN_LIMITER_REDIS_DOWN_POLICY: "deny",
    });
    expect(c).toMatchObject({ port: 9000, redisUrl: "redis://127.0.0.1:6379", resourcesDirs: ["/a", "/b"] });
    expect(c.search).toMatchObject({ url: "http://search:8081", internalToken: "t" });
    expect(c.limiter.redisDownPolicy).toBe("deny");
  });

  it('treats empty variables as unset (an unset Helm value renders as "")', () => {
    const c = loadGatewayConfig({ CAPSTAN_NAMESPACE: "", REDIS_URL: "", CAPSTAN_SECRETS_DIR: " " });
    expect(c.namespace).toBeUndefined();
    expect(c.redisUrl).toBeUndefined();
    expect(c.secretsDir).toBeUndefined();
  });

  it("fails fast naming the bad variable", () => {
    expect(() => loadGatewayConfig({ PORT: "eighty" })).toThrow(ConfigError);
    expect(() => loadGatewayConfig({ CAPSTAN_LIMITER_REDIS_DOWN_POLICY: "maybe" })).toThrow(
      /CAPSTAN_LIMITER_REDIS_DOWN_POLICY/,
    );
  });
});
