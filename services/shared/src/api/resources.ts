// Typed resources of the five kinds, and parsing of a raw object (YAML file or watch event)
// into one, with the CRD's defaults applied by the same zod schemas.
import type { z } from "zod";
import type { AccessChannelSpec, AccessChannelStatus } from "./access-channel.ts";
import type { AgentSpec, AgentStatus } from "./agent.ts";
import { API_VERSION, type ObjectMeta, type Resource } from "./common.ts";
import { KINDS, type KindName } from "./kinds.ts";
import type { KnowledgeBaseSpec, KnowledgeBaseStatus } from "./knowledge-base.ts";
import type { ScraperSpec, ScraperStatus } from "./scraper.ts";
import type { SearchKeySpec, SearchKeyStatus } from "./search-key.ts";

export type Agent = Resource<"Agent", AgentSpec, AgentStatus>;
export type AccessChannel = Resource<"AccessChannel", AccessChannelSpec, AccessChannelStatus>;
export type SearchKey = Resource<"SearchKey", SearchKeySpec, SearchKeyStatus>;
export type KnowledgeBase = Resource<"KnowledgeBase", KnowledgeBaseSpec, KnowledgeBaseStatus>;
export type Scraper = Resource<"Scraper", ScraperSpec, ScraperStatus>;
export type AnyResource = Agent | AccessChannel | SearchKey | KnowledgeBase | Scraper;

export class ResourceParseError extends Error {
  readonly issues: z.core.$ZodIssue[];
  constructor(message: string, issues: z.core.$ZodIssue[] = []) {
    super(message);
    this.issues = issues;
    this.name = "ResourceParseError";
  }
}

function isKind(kind: unknown): kind is KindName {
  return typeof kind === "string" && Object.hasOwn(KINDS, kind);
}

/** Validates a raw object of one of the five kinds and applies spec defaults. */
export function parseResource(raw: unknown): AnyResource {
  if (raw === null || typeof raw !== "object") throw new ResourceParseError("resource must be an object");
  const obj = raw as { apiVersion?: unknown; kind?: unknown; metadata?: ObjectMeta; spec?: unknown; status?: unknown };
  if (obj.apiVersion !== API_VERSION)
    throw new ResourceParseError(`apiVersion must be ${API_VERSION}, got ${String(obj.apiVersion)}`);
  if (!isKind(obj.kind)) throw new ResourceParseError(`unknown kind ${String(obj.kind)}`);
  if (!obj.metadata?.name) throw new ResourceParseError(`${obj.kind}: metadata.name is required`);
  const where = `${obj.kind} ${obj.metadata.namespace ?? "default"}/${obj.metadata.name}`;
  const spec = KINDS[obj.kind].spec.safeParse(obj.spec ?? {});
  if (!spec.success) {
    const first = spec.error.issues[0];
    throw new ResourceParseError(
      `${where}: spec.${first?.path.join(".") ?? ""}: ${first?.message ?? "invalid"}`,
      spec.error.issues,
    );
  }
  const status = obj.status === undefined ? undefined : KINDS[obj.kind].status.safeParse(obj.status);
  return {
    apiVersion: API_VERSION,
    kind: obj.kind,
    metadata: obj.metadata,
    spec: spec.data,
    ...(status?.success ? { status: status.data } : {}),
  } as AnyResource;
}
