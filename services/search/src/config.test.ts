import { ConfigError } from "@capstan/shared";
import { describe, expect, it } from "vitest";
import { loadSearchConfig } from "./config.ts";

describe("loadSearchConfig", () => {
  it("has the documented defaults", () => {
    const c = loadSearchConfig({});
    expect(c.port).toBe(8081);
    expect(c.host).toBe("0.0.0.0");
    expect(c.qdrant.url).toBeUndefined();
    expect(c.search.maxResultsLimit).toBe(100);
    expect(c.search.batchMaxQueries).toBe(32);
  });

  it("takes the gateway's Redis-down policies, by the same names", () => {
    for (const policy of ["local", "deny", "fail-open"]) {
      expect(loadSearchConfig({ CAPSTAN_LIMITER_REDIS_DOWN_POLICY: policy }).limiter.redisDownPolicy).toBe(policy);
    }
    // "allow" was search's own name for fail-open: one setting, one set of values across services.
    expect(() => loadSearchConfig({ CAPSTAN_LIMITER_REDIS_DOWN_POLICY: "allow" })).toThrow(
      /CAPSTAN_LIMITER_REDIS_DOWN_POLICY/,
    );
  });

  it("reads the environment", () => {
    const c = loadSearchConfig({
      PORT: "9000",
      CAPSTAN_RESOURCES_DIR: "/a, /b",
      CAPSTAN_INTERNAL_TOKEN: "0123456789abcdef",
      CAPSTAN_TRUSTED_PROXIES: "10.0.0.0/8,::1",
      QDRANT_URL: "http://127.0.0.1:6333",
      CAPSTAN_DATA_DIR: "/data",
    });
    expect(c.port).toBe(9000);
    expect(c.resourcesDirs).toEqual(["/a", "/b"]);
    expect(c.trustedProxies).toEqual(["10.0.0.0/8", "::1"]);
    expect(c.qdrant.url).toBe("http://127.0.0.1:6333");
    expect(c.dataDir).toBe("/data");
  });

  it('treats empty variables as unset (an unset Helm value renders as "")', () => {
    const c = loadSearchConfig({ QDRANT_URL: "", CAPSTAN_NAMESPACE: "", CAPSTAN_DATA_DIR: "" });
    expect(c.qdrant.url).toBeUndefined();
    expect(c.namespace).toBeUndefined();
    expect(c.dataDir).toBeUndefined();
  });

  it("refuses an unknown CAPSTAN_ or QDRANT_ variable, naming it and the nearest one it reads", () => {
    expect(() => loadSearchConfig({ QDRANT_APIKEY: "k" })).toThrow(
      /QDRANT_APIKEY: unknown variable \(did you mean QDRANT_API_KEY\?\)/,
    );
    expect(() => loadSearchConfig({ CAPSTAN_EMBEDING_THREADS: "2" })).toThrow(
      /did you mean CAPSTAN_EMBEDDING_THREADS\?/,
    );
    expect(loadSearchConfig({ CAPSTAN_SEARCH_URL: "http://x", CAPSTAN_EMBEDDING_THREADS: "2" }).embedding.threads).toBe(
      2,
    );
  });

  it("names the variable of a bad value", () => {
    expect(() => loadSearchConfig({ CAPSTAN_TRUSTED_PROXIES: "10.0.0.0/99" })).toThrow(ConfigError);
    expect(() => loadSearchConfig({ CAPSTAN_TRUSTED_PROXIES: "10.0.0.0/99" })).toThrow(/trustedProxies/);
    expect(() => loadSearchConfig({ CAPSTAN_INTERNAL_TOKEN: "short" })).toThrow(/CAPSTAN_INTERNAL_TOKEN/);
    expect(() => loadSearchConfig({ PORT: "http" })).toThrow(/PORT/);
  });
});
