// The registry of the five kinds: names, schemas and printer columns, in one place.
import type { z } from "zod";
import { accessChannelSpec, accessChannelStatus } from "./access-channel.ts";
import { agentSpec, agentStatus } from "./agent.ts";
import { knowledgeBaseSpec, knowledgeBaseStatus } from "./knowledge-base.ts";
import { scraperSpec, scraperStatus } from "./scraper.ts";
import { searchKeySpec, searchKeyStatus } from "./search-key.ts";

export interface PrinterColumn {
  name: string;
  type: "string" | "integer" | "number" | "boolean" | "date";
  jsonPath: string;
  description?: string;
  priority?: number;
}

export interface KindInfo {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  spec: z.ZodType;
  status: z.ZodType;
  columns: PrinterColumn[];
}

const ready: PrinterColumn = {
  name: "Ready",
  type: "string",
  jsonPath: '.status.conditions[?(@.type=="Ready")].status',
};
const reason: PrinterColumn = {
  name: "Reason",
  type: "string",
  jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
  priority: 1,
};
const age: PrinterColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };

export const KINDS = {
  Agent: {
    kind: "Agent",
    plural: "agents",
    singular: "agent",
    shortNames: ["cag"],
    spec: agentSpec,
    status: agentStatus,
    columns: [
      { name: "Mode", type: "string", jsonPath: ".status.mode" },
      { name: "Model", type: "string", jsonPath: ".spec.provider.model" },
      ready,
      reason,
      age,
    ],
  },
  AccessChannel: {
    kind: "AccessChannel",
    plural: "accesschannels",
    singular: "accesschannel",
    shortNames: ["ach"],
    spec: accessChannelSpec,
    status: accessChannelStatus,
    columns: [
      { name: "Channel", type: "string", jsonPath: ".spec.channelName" },
      { name: "Agent", type: "string", jsonPath: ".spec.agentRef.name" },
      { name: "QPM", type: "integer", jsonPath: ".spec.qpm" },
      { name: "TPM", type: "integer", jsonPath: ".spec.tpm", priority: 1 },
      { name: "Spent", type: "integer", jsonPath: ".status.budget.spent", priority: 1 },
      { name: "Key", type: "string", jsonPath: ".status.keyPrefix" },
      { name: "Expires", type: "string", jsonPath: ".status.expiresAt" },
      ready,
      reason,
      age,
    ],
  },
  SearchKey: {
    kind: "SearchKey",
    plural: "searchkeys",
    singular: "searchkey",
    shortNames: ["skey"],
    spec: searchKeySpec,
    status: searchKeyStatus,
    columns: [
      { name: "Key Name", type: "string", jsonPath: ".spec.keyName" },
      { name: "Scope", type: "string", jsonPath: ".spec.knowledgeIds", priority: 1 },
      { name: "Key", type: "string", jsonPath: ".status.keyPrefix" },
      { name: "Expires", type: "string", jsonPath: ".status.expiresAt" },
      ready,
      reason,
      age,
    ],
  },
  KnowledgeBase: {
    kind: "KnowledgeBase",
    plural: "knowledgebases",
    singular: "knowledgebase",
    shortNames: ["kb"],
    spec: knowledgeBaseSpec,
    status: knowledgeBaseStatus,
    columns: [
      { name: "ID", type: "string", jsonPath: ".status.knowledgeId" },
      { name: "Docs", type: "integer", jsonPath: ".status.documents" },
      { name: "Chunks", type: "integer", jsonPath: ".status.chunks" },
      { name: "Refreshed", type: "date", jsonPath: ".status.lastRefreshTime" },
      ready,
      reason,
      age,
    ],
  },
  Scraper: {
    kind: "Scraper",
    plural: "scrapers",
    singular: "scraper",
    shortNames: ["scr"],
    spec: scraperSpec,
    status: scraperStatus,
    columns: [
      { name: "Replicas", type: "integer", jsonPath: ".spec.replicas" },
      { name: "Ready Replicas", type: "integer", jsonPath: ".status.readyReplicas" },
      { name: "Endpoint", type: "string", jsonPath: ".status.endpoint", priority: 1 },
      ready,
      reason,
      age,
    ],
  },
} as const satisfies Record<string, KindInfo>;

export type KindName = keyof typeof KINDS;
export const KIND_NAMES = Object.keys(KINDS) as KindName[];
