// Standalone mode's stand-in for the operator's key issuing: the keys of AccessChannels and
// SearchKeys live in <state>/keys.json (mode 0600, like Secrets), are reused across restarts, and
// the resources are written back with the status the operator would give them, computed by the
// operator's own pure translators. The data-plane services read that folder.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { deriveAccessChannelStatus, deriveAgentStatus, deriveSearchKeyStatus } from "@capstan/operator/translate";
import { generateKey } from "@capstan/shared";
import { type AnyResource, knowledgeIdOf } from "@capstan/shared/api";
import { stringify } from "yaml";

export interface IssuedKey {
  kind: "AccessChannel" | "SearchKey";
  namespace: string;
  name: string;
  label: string;
  key: string;
}

type KeyStore = Record<string, { key: string; issuedAt: string }>;

function loadKeys(path: string): KeyStore {
  return existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as KeyStore) : {};
}

function saveSecret(path: string, content: string): void {
  writeFileSync(path, content, { mode: 0o600 });
  chmodSync(path, 0o600);
}

/** The internal service-to-service token, generated once. */
export function internalToken(stateDir: string): string {
  const path = join(stateDir, "internal-token");
  if (existsSync(path)) return readFileSync(path, "utf8").trim();
  const token = generateKey("scraper").replace("cap_scr_", "cap_int_");
  saveSecret(path, token);
  return token;
}

/** Issues missing keys, computes every status, writes <state>/resources/resources.yaml. */
export function materialize(
  resources: AnyResource[],
  stateDir: string,
  endpoints: Endpoints,
  now = new Date(),
): { resourcesDir: string; keys: IssuedKey[] } {
  const resourcesDir = join(stateDir, "resources");
  mkdirSync(resourcesDir, { recursive: true });
  const keysPath = join(stateDir, "keys.json");
  const store = loadKeys(keysPath);
  const issued: IssuedKey[] = [];
  const context: StatusContext = {
    knowledgeIds: new Set(resources.filter((r) => r.kind === "KnowledgeBase").map((kb) => knowledgeIdOf(kb))),
    agents: resources.filter((r) => r.kind === "Agent"),
    endpoints,
    now,
    keyFor: (r, kind) => {
      const id = `${r.kind}/${r.metadata.namespace ?? "default"}/${r.metadata.name}`;
      store[id] ??= { key: generateKey(kind), issuedAt: now.toISOString() };
      return store[id];
    },
    issue: (key) => issued.push(key),
  };
  const out = resources.map((r) => withStatus(r, context));

  saveSecret(keysPath, `${JSON.stringify(store, null, 2)}\n`);
  writeFileSync(
    join(resourcesDir, "resources.yaml"),
    `# Written by npm start from ${out.length} resources, with the status the operator would give them.\n` +
      out.map((r) => stringify(r)).join("---\n"),
  );
  return { resourcesDir, keys: issued };
}

type Endpoints = { gateway: string; search: string };
type Agent = Extract<AnyResource, { kind: "Agent" }>;
type AccessChannel = Extract<AnyResource, { kind: "AccessChannel" }>;
type SearchKey = Extract<AnyResource, { kind: "SearchKey" }>;

/** What every status is computed from, and where a key is issued (kept in keys.json) and recorded. */
interface StatusContext {
  knowledgeIds: Set<string>;
  agents: Agent[];
  endpoints: Endpoints;
  now: Date;
  keyFor(r: AnyResource, kind: "chat" | "search"): KeyStore[string];
  issue(key: IssuedKey): void;
}

/** The resource with the status the operator would give it. */
function withStatus(r: AnyResource, c: StatusContext): AnyResource {
  switch (r.kind) {
    case "Agent":
      return agentWithStatus(r, c);
    case "AccessChannel":
      return channelWithStatus(r, c);
    case "SearchKey":
      return searchKeyWithStatus(r, c);
    case "KnowledgeBase":
      return { ...r, status: { ...(r.status ?? {}), knowledgeId: knowledgeIdOf(r) } };
    default:
      return r;
  }
}

function agentWithStatus(r: Agent, c: StatusContext): Agent {
  const missing = (r.spec.knowledge?.knowledgeIds ?? []).filter((id) => !c.knowledgeIds.has(id));
  return {
    ...r,
    status: deriveAgentStatus({ agent: r, providerKey: undefined, missingKnowledgeIds: missing, now: c.now }).status,
  };
}

/** An AccessChannel with its key (issued when missing) and the status its Agent gives it. */
function channelWithStatus(r: AccessChannel, c: StatusContext): AccessChannel {
  const namespace = r.metadata.namespace ?? "default";
  const k = c.keyFor(r, "chat");
  const agent = c.agents.find(
    (a) => a.metadata.name === r.spec.agentRef.name && (a.metadata.namespace ?? "default") === namespace,
  );
  const withAgentStatus = agent
    ? {
        ...agent,
        status: deriveAgentStatus({ agent, providerKey: undefined, missingKnowledgeIds: [], now: c.now }).status,
      }
    : undefined;
  const status = deriveAccessChannelStatus({
    channel: r,
    agent: withAgentStatus,
    key: generatedKey(k),
    now: c.now,
    endpoint: c.endpoints.gateway,
  }).status;
  c.issue({ kind: "AccessChannel", namespace, name: r.metadata.name, label: r.spec.channelName, key: k.key });
  return { ...r, status };
}

/** A SearchKey with its key (issued when missing) and its status. */
function searchKeyWithStatus(r: SearchKey, c: StatusContext): SearchKey {
  const namespace = r.metadata.namespace ?? "default";
  const k = c.keyFor(r, "search");
  const status = deriveSearchKeyStatus({
    searchKey: r,
    key: generatedKey(k),
    missingKnowledgeIds: r.spec.knowledgeIds.filter((id) => !c.knowledgeIds.has(id)),
    now: c.now,
    endpoint: c.endpoints.search,
  }).status;
  c.issue({ kind: "SearchKey", namespace, name: r.metadata.name, label: r.spec.keyName, key: k.key });
  return { ...r, status };
}

/** A key from keys.json as the operator's status translators take a key read from its Secret. */
function generatedKey(k: KeyStore[string]) {
  return {
    ok: true as const,
    value: k.key,
    secretName: "(standalone: .state/keys.json)",
    source: "generated" as const,
    issuedAt: new Date(k.issuedAt),
  };
}
