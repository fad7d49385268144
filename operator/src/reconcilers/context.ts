// What every reconciler gets: config, the API client, the shared informers (the cache), events,
// a logger and a clock. Reconcilers read from the cache and write through the client.
import type { Logger } from "@capstan/shared";
import type { ResourceType } from "@capstan/shared/kube";
import type { OperatorConfig } from "../config.ts";
import type { OperatorMetrics } from "../fleet-metrics.ts";
import type { GatewayUsage } from "../ingest/gateway-usage.ts";
import type { RefreshJobs } from "../ingest/refresh-jobs.ts";
import type { Scrape } from "../ingest/scrape.ts";
import type { SearchDocuments } from "../ingest/search-documents.ts";
import type { ObjectClient } from "../kube/client.ts";
import type { EventRecorder } from "../kube/events.ts";
import type { Informers } from "./informers.ts";

export const GROUP_VERSION = "capstan.dev/v1alpha1";
export const AGENT: ResourceType = { apiVersion: GROUP_VERSION, kind: "Agent", plural: "agents" };
export const ACCESS_CHANNEL: ResourceType = {
  apiVersion: GROUP_VERSION,
  kind: "AccessChannel",
  plural: "accesschannels",
};
export const SEARCH_KEY: ResourceType = { apiVersion: GROUP_VERSION, kind: "SearchKey", plural: "searchkeys" };
export const KNOWLEDGE_BASE: ResourceType = {
  apiVersion: GROUP_VERSION,
  kind: "KnowledgeBase",
  plural: "knowledgebases",
};
export const SCRAPER: ResourceType = { apiVersion: GROUP_VERSION, kind: "Scraper", plural: "scrapers" };

export type { Informers } from "./informers.ts";

export interface OperatorContext {
  config: OperatorConfig;
  client: ObjectClient;
  informers: Informers;
  events: EventRecorder;
  logger: Logger;
  now: () => Date;
  search: SearchDocuments;
  scrape: Scrape;
  /** Budget spend and upstream breakers, read from the gateway's internal API. */
  gatewayUsage: GatewayUsage;
  metrics: OperatorMetrics;
  /** KnowledgeBase refreshes running beside the reconciles. */
  refreshes: RefreshJobs;
}
