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
  endpoints: { gateway: string; search: string },
  now = new Date(),
): { resourcesDir: string; keys: IssuedKey[] } {
  mkdirSync(join(stateDir, "resources"), { recursive: true });
  const keysPath = join(stateDir, "keys.json");
  const store = loadKeys(keysPath);
  const issued: IssuedKey[] = [];
  const keyFor = (r: AnyResource, kind: "chat" | "search") => {
    const id = `${r.kind}/${r.metadata.namespace ?? "default"}/${r.metadata.name}`;
    store[id] ??= { key: generateKey(kind), issuedAt: now.toISOString() };
    return store[id];
  };
  const knowledgeIds = new Set(resources.filter((r) => r.kind === "KnowledgeBase").map((kb) => knowledgeIdOf(kb)));
  const agents = resources.filter((r) => r.kind === "Agent");

  const out = resources.map((r): AnyResource => {
    const namespace = r.metadata.namespace ?? "default";
    switch (r.kind) {
      case "Agent": {
        const missing = (r.spec.knowledge?.knowledgeIds ?? []).filter((id) => !knowledgeIds.has(id));
        return {
          ...r,
          status: deriveAgentStatus({ agent: r, providerKey: undefined, missingKnowledgeIds: missing, now }).status,
        };
      }
      case "AccessChannel": {
        const k = keyFor(r, "chat");
        const agent = agents.find(
          (a) => a.metadata.name === r.spec.agentRef.name && (a.metadata.namespace ?? "default") === namespace,
        );
        const withAgentStatus = agent
          ? {
              ...agent,
              status: deriveAgentStatus({ agent, providerKey: undefined, missingKnowledgeIds: [], now }).status,
            }
          : undefined;
        const status = deriveAccessChannelStatus({
          channel: r,
          agent: withAgentStatus,
          key: {
            ok: true,
            value: k.key,
            secretName: "(standalone: .state/keys.json)",
            source: "generated",
            issuedAt: new Date(k.issuedAt),
          },
          now,
          endpoint: endpoints.gateway,
        }).status;
        issued.push({ kind: "AccessChannel", namespace, name: r.metadata.name, label: r.spec.channelName, key: k.key });
        return { ...r, status };
      }
      case "SearchKey": {
        const k = keyFor(r, "search");
        const status = deriveSearchKeyStatus({
          searchKey: r,
          key: {
            ok: true,
            value: k.key,
            secretName: "(standalone: .state/keys.json)",
            source: "generated",
            issuedAt: new Date(k.issuedAt),
          },
          missingKnowledgeIds: r.spec.knowledgeIds.filter((id) => !knowledgeIds.has(id)),
          now,
          endpoint: endpoints.search,
        }).status;
        issued.push({ kind: "SearchKey", namespace, name: r.metadata.name, label: r.spec.keyName, key: k.key });
        return { ...r, status };
      }
      case "KnowledgeBase":
        return { ...r, status: { ...(r.status ?? {}), knowledgeId: knowledgeIdOf(r) } };
      default:
        return r;
    }
  });

  saveSecret(keysPath, `${JSON.stringify(store, null, 2)}\n`);
  const resourcesDir = join(stateDir, "resources");
  writeFileSync(
    join(resourcesDir, "resources.yaml"),
    `# Written by npm start from ${out.length} resources, with the status the operator would give them.\n` +
      out.map((r) => stringify(r)).join("---\n"),
  );
  return { resourcesDir, keys: issued };
}
