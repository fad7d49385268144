// The platform configuration file of standalone mode (CAPSTAN_CONFIG, YAML or JSON). Its `scraping:`
// section takes the reference's names and defaults — enabled (true), url, timeout (30 s),
// max_retries (3), api_key — as the operator's does in a cluster. Unknown keys stop the launcher,
// named with the nearest valid key (loadConfig).
import { loadConfig } from "@capstan/shared";
import { httpUrl } from "@capstan/shared/api";
import { type ScrapingSettingsInput, scrapingSettingsSchema } from "@capstan/shared/clients/scraper-client";
import { z } from "zod";

export const platformConfigSchema = z.object({
  /** Without url: the launcher's own scraper (SCRAPER_PORT), started here. */
  scraping: scrapingSettingsSchema.extend({ url: httpUrl.optional() }).prefault({}),
});
export type PlatformConfig = z.infer<typeof platformConfigSchema>;

export function loadPlatformConfig(file: string | undefined): PlatformConfig {
  return loadConfig(platformConfigSchema, { env: {}, file });
}

export interface ScrapingPlan {
  /** Start the launcher's own scraper process. */
  startLocal: boolean;
  /** Extra environment of that process (its API key, when the section names one). */
  localEnv: Record<string, string>;
  /** The settings of the launcher's scraper client; undefined when scraping is disabled. */
  client: ScrapingSettingsInput | undefined;
  /** One line for the start-up summary. */
  summary: string;
}

/**
 * What the scraping section means for the launcher: a url elsewhere is a scraper someone else runs
 * (none is started here); no url, or the launcher's own address, starts the local one with the
 * section's api_key. `localOff` is CAPSTAN_SCRAPER=off (no local scraper whatever the file says).
 */
export function scrapingPlan(config: PlatformConfig, local: { url: string; off: boolean }): ScrapingPlan {
  const s = config.scraping;
  if (!s.enabled) {
    return {
      startLocal: false,
      localEnv: {},
      client: undefined,
      summary: "Scraping: disabled (scraping.enabled is false); URL sources are skipped",
    };
  }
  const url = s.url ?? local.url;
  const isLocal = new URL(url).origin === new URL(local.url).origin;
  const startLocal = isLocal && !local.off;
  const localEnv: Record<string, string> = s.api_key ? { API_KEY: s.api_key, AUTH_ENABLED: "true" } : {};
  const where = isLocal ? (local.off ? "the local scraper is off (CAPSTAN_SCRAPER=off)" : "started here") : "external";
  return {
    startLocal,
    localEnv: startLocal ? localEnv : {},
    client:
      isLocal && local.off
        ? undefined
        : { url, timeout: s.timeout, max_retries: s.max_retries, ...(s.api_key ? { api_key: s.api_key } : {}) },
    summary:
      `Scraping: ${url} (${where}; timeout ${s.timeout} s, ${s.max_retries} retries, ` +
      `${s.api_key ? "API key set" : "no API key"})`,
  };
}
