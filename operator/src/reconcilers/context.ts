// What every reconciler gets: config, the API client, the shared informers (the cache), events,
// a logger and a clock. Reconcilers read from the cache and write through the client.
import type { Logger } from "@capstan/shared";
import { API_VERSION, KINDS, type KindName } from "@capstan/shared/api";
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

export const GROUP_VERSION = API_VERSION;
/** A kind's API path parts, from the API module's registry of the five kinds. */
const typeOf = (name: KindName): ResourceType => ({ apiVersion: API_VERSION, kind: name, plural: KINDS[name].plural });
export const AGENT = typeOf("Agent");
export const ACCESS_CHANNEL = typeOf("AccessChannel");
export const SEARCH_KEY = typeOf("SearchKey");
export const KNOWLEDGE_BASE = typeOf("KnowledgeBase");
export const SCRAPER = typeOf("Scraper");

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
