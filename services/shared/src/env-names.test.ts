import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError, loadConfig } from "./config.ts";
import { unknownEnv } from "./env-names.ts";

const own = ["CAPSTAN_LIMITER_WINDOW_MS", "CAPSTAN_SEARCH_URL", "QDRANT_URL", "PORT"];
const strict = { prefixes: ["CAPSTAN_", "QDRANT_"] };

describe("unknownEnv", () => {
  it("names an unknown variable under the process's prefixes and the nearest one it reads", () => {
    expect(unknownEnv({ CAPSTAN_LIMITR_WINDOW_MS: "1000", QDRANT_URLL: "http://q" }, own, strict)).toEqual([
      "CAPSTAN_LIMITR_WINDOW_MS: unknown variable (did you mean CAPSTAN_LIMITER_WINDOW_MS?)",
      "QDRANT_URLL: unknown variable (did you mean QDRANT_URL?)",
    ]);
  });

  it("lets through its own variables, the platform's other processes' and tools', and empty ones", () => {
    const env = {
      CAPSTAN_SEARCH_URL: "http://s",
      CAPSTAN_DATA_DIR: "/data", // search's, handed to every process by the standalone launcher
      CAPSTAN_STATE_DIR: "/state", // the launcher's own
      CAPSTAN_CACHE: "/cache", // setup's
      CAPSTAN_SECRET_OPENAI_KEY_API_KEY: "sk-1", // a provider key for the gateway's env resolver
      CAPSTAN_TYPO: "", // empty means unset
    };
    expect(unknownEnv(env, own, strict)).toEqual([]);
  });

  it("never looks outside its prefixes: Node's, the shell's and Kubernetes' own variables pass", () => {
    const env = { NODE_OPTIONS: "--x", HOME: "/root", KUBERNETES_SERVICE_HOST: "10.0.0.1", POTR: "1" };
    expect(unknownEnv(env, own, strict)).toEqual([]);
  });

  it("lets through Kubernetes' service links of a Service named capstan-…, and only those", () => {
    const links = {
      CAPSTAN_GATEWAY_SERVICE_HOST: "10.0.0.2",
      CAPSTAN_GATEWAY_SERVICE_PORT: "80",
      CAPSTAN_GATEWAY_SERVICE_PORT_HTTP: "80",
      CAPSTAN_GATEWAY_PORT: "tcp://10.0.0.2:80",
      CAPSTAN_GATEWAY_PORT_80_TCP: "tcp://10.0.0.2:80",
      CAPSTAN_GATEWAY_PORT_80_TCP_PROTO: "tcp",
      CAPSTAN_GATEWAY_PORT_80_TCP_PORT: "80",
      CAPSTAN_GATEWAY_PORT_80_TCP_ADDR: "10.0.0.2",
    };
    expect(unknownEnv(links, own, strict)).toEqual([]);
    // The same shape without the Service's _SERVICE_HOST is no service link.
    expect(unknownEnv({ CAPSTAN_GATEWAY_PORT: "8080" }, own, strict)).toEqual([
      "CAPSTAN_GATEWAY_PORT: unknown variable (did you mean CAPSTAN_SEARCH_URL?)",
    ]);
  });

  it("stops loadConfig with a ConfigError naming every stray variable", () => {
    const schema = z.object({ port: z.int().default(1) });
    const load = () =>
      loadConfig(schema, {
        env: { CAPSTAN_PROT: "2", CAPSTAN_PORT: "3" },
        envMap: { CAPSTAN_PORT: "port" },
        strictEnv: { prefixes: ["CAPSTAN_"] },
      });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/CAPSTAN_PROT: unknown variable \(did you mean CAPSTAN_PORT\?\)/);
  });
});
