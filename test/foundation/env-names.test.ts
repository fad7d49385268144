// Every variable a service reads under its own prefixes is in the platform's list
// (services/shared/src/env-names.ts), so no process refuses a variable the standalone launcher or a
// pod hands it for another process. A service's new variable missing from the list fails here.
import { GATEWAY_STRICT_ENV, gatewayEnvMap } from "@capstan/gateway";
import { SCRAPER_ENV, SCRAPER_STRICT_ENV } from "@capstan/scraper";
import { SEARCH_STRICT_ENV, searchEnvMap } from "@capstan/search";
import { PLATFORM_ENV, type StrictEnv } from "@capstan/shared";
import { describe, expect, it } from "vitest";
import { operatorEnvMap } from "../../operator/src/config.ts";

const services: [string, Record<string, unknown>, StrictEnv][] = [
  ["gateway", gatewayEnvMap, GATEWAY_STRICT_ENV],
  ["search", searchEnvMap, SEARCH_STRICT_ENV],
  ["scraper", SCRAPER_ENV, SCRAPER_STRICT_ENV],
  ["operator", operatorEnvMap, { prefixes: ["CAPSTAN_"] }],
];

describe("the platform's variables", () => {
  for (const [name, envMap, strict] of services) {
    it(`lists every ${name} variable under ${strict.prefixes.join(", ")}`, () => {
      const mine = [...Object.keys(envMap), ...(strict.also ?? [])].filter((v) =>
        strict.prefixes.some((p) => v.startsWith(p)),
      );
      expect(mine.length).toBeGreaterThan(0);
      expect(mine.filter((v) => !PLATFORM_ENV.has(v))).toEqual([]);
    });
  }
});
