import { ConfigError } from "@capstan/shared";
import { describe, expect, it } from "vitest";
import { loadGatewayConfig } from "./config.ts";

describe("gateway config", () => {
  it("has the documented defaults", () => {
    const c = loadGatewayConfig({});
    expect(c).toMatchObject({ port: 8080, host: "0.0.0.0", resourcesDirs: [] });
    expect(c.redisUrl).toBeUndefined();
    expect(c.search.url).toBe("http://127.0.0.1:8091");
    // Search's internal port (the only one that takes the internal token); no egress exceptions.
    expect(c.upstream.allowedHosts).toEqual([]);
    expect(c.limiter).toMatchObject({ windowMs: 60_000, redisDownPolicy: "local", replicas: 1 });
    expect(c.shutdown).toEqual({ terminationGraceSeconds: 30, unreadyDelayMs: 5_000, reserveMs: 4_000 });
  });

  it("reads the replica count and the grace period the operator passes, and refuses a grace too short", () => {
    const c = loadGatewayConfig({
      CAPSTAN_LIMITER_REPLICAS: "3",
      CAPSTAN_LIMITER_REDIS_DOWN_POLICY: "fail-open",
      CAPSTAN_TERMINATION_GRACE_SECONDS: "60",
    });
    expect(c.limiter).toMatchObject({ replicas: 3, redisDownPolicy: "fail-open" });
    expect(c.shutdown.terminationGraceSeconds).toBe(60);
    expect(() => loadGatewayConfig({ CAPSTAN_TERMINATION_GRACE_SECONDS: "8" })).toThrow(/terminationGraceSeconds/);
    expect(() => loadGatewayConfig({ CAPSTAN_LIMITER_REDIS_DOWN_POLICY: "allow" })).toThrow(
      /CAPSTAN_LIMITER_REDIS_DOWN_POLICY/,
    );
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

  it("refuses an unknown CAPSTAN_ variable, naming it and the nearest one it reads", () => {
    expect(() => loadGatewayConfig({ CAPSTAN_LIMITR_WINDOW_MS: "1000" })).toThrow(
      /CAPSTAN_LIMITR_WINDOW_MS: unknown variable \(did you mean CAPSTAN_LIMITER_WINDOW_MS\?\)/,
    );
    // Node's, Kubernetes' (service links of the Service capstan-search) and search's variables pass.
    const c = loadGatewayConfig({
      NODE_OPTIONS: "--enable-source-maps",
      KUBERNETES_SERVICE_HOST: "10.0.0.1",
      CAPSTAN_SEARCH_SERVICE_HOST: "10.0.0.9",
      CAPSTAN_SEARCH_PORT: "tcp://10.0.0.9:80",
      CAPSTAN_DATA_DIR: "/var/lib/capstan",
      CAPSTAN_INTERNAL_PORT: "9090",
    });
    expect(c.internalPort).toBe(9090);
  });

  it("fails fast naming the bad variable", () => {
    expect(() => loadGatewayConfig({ PORT: "eighty" })).toThrow(ConfigError);
    expect(() => loadGatewayConfig({ CAPSTAN_LIMITER_REDIS_DOWN_POLICY: "maybe" })).toThrow(
      /CAPSTAN_LIMITER_REDIS_DOWN_POLICY/,
    );
  });
});
