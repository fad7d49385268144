// Finds the AccessChannel of a bearer key: the key is hashed and looked up in an index of
// status.keyHash, rebuilt from the read-only ResourceView on every change. Expiry is checked at
// request time against spec.expiresAt (and status.expiresAt, whichever is earlier), so a key stops
// working the moment it expires, whether or not the operator has reconciled yet. A user-supplied
// key is matched by its HMAC under the verifier key (docs/security.md "Key verifiers").
import { hash } from "node:crypto";
import { bearerToken, verifyingHash } from "@capstan/shared";
import type { AccessChannel, Agent } from "@capstan/shared/api";
import type { ResourceView } from "@capstan/shared/resource-view";
import { GatewayError } from "./errors.ts";

export interface ResolvedChannel {
  /** namespace/name: the label used in metrics, limiter and history keys. */
  id: string;
  namespace: string;
  name: string;
  channel: AccessChannel;
  agent: Agent | undefined;
  agentName: string;
  qpm: number;
  /** Tokens per minute; undefined: no token limit. */
  tpm: number | undefined;
  budget: AccessChannel["spec"]["budget"];
  keepHistory: boolean;
  /** Milliseconds since epoch, or undefined for no expiry. */
  expiresAtMs: number | undefined;
}

/**
 * The same value as hashKey() from @capstan/shared (`sha256:<hex>`), with Node's one-shot hash:
 * no Hash object per request.
 */
export function keyHashOf(key: string): string {
  return `sha256:${hash("sha256", key, "hex")}`;
}

/** What a request needs of a channel, derived once per channel object (the view replaces objects on change). */
interface ChannelFacts {
  id: string;
  namespace: string;
  agentName: string;
  expiresAtMs: number | undefined;
}

function expiryOf(channel: AccessChannel): number | undefined {
  const times = [channel.spec.expiresAt, channel.status?.expiresAt]
    .filter((t): t is string => typeof t === "string")
    .map((t) => Date.parse(t))
    .filter((t) => Number.isFinite(t));
  return times.length > 0 ? Math.min(...times) : undefined;
}

export class ChannelDirectory {
  private byHash = new Map<string, AccessChannel>();
  private facts = new WeakMap<AccessChannel, ChannelFacts>();
  private readonly view: ResourceView;
  private readonly verifierKey: string | undefined;
  private readonly unsubscribe: () => void;

  /** verifierKey: the operator's HMAC key for user-supplied keys; absent, only generated keys match. */
  constructor(view: ResourceView, verifierKey?: string) {
    this.view = view;
    this.verifierKey = verifierKey;
    this.rebuild();
    this.unsubscribe = view.onChange((event) => {
      if (event.type === "replace" ? event.kind === "AccessChannel" : event.resource.kind === "AccessChannel") {
        this.rebuild();
      }
    });
  }

  close(): void {
    this.unsubscribe();
  }

  get size(): number {
    return this.byHash.size;
  }

  private rebuild(): void {
    const next = new Map<string, AccessChannel>();
    for (const channel of this.view.list("AccessChannel")) {
      if (channel.metadata.deletionTimestamp) continue;
      const hash = channel.status?.keyHash;
      if (hash) next.set(hash, channel);
    }
    this.byHash = next;
    this.facts = new WeakMap();
  }

  /** The channel of an Authorization header, or a 401 GatewayError. */
  authenticate(authorization: string | string[] | undefined, now: number): ResolvedChannel {
    const key = bearerToken(authorization);
    if (!key) throw new GatewayError("missing_api_key");
    const channel =
      this.byHash.get(keyHashOf(key)) ??
      (this.verifierKey ? this.byHash.get(verifyingHash(key, this.verifierKey)) : undefined);
    if (!channel) throw new GatewayError("invalid_api_key");
    let facts = this.facts.get(channel);
    if (!facts) {
      const namespace = channel.metadata.namespace ?? "default";
      facts = {
        id: `${namespace}/${channel.metadata.name}`,
        namespace,
        agentName: channel.spec.agentRef.name,
        expiresAtMs: expiryOf(channel),
      };
      this.facts.set(channel, facts);
    }
    const { id, namespace, agentName, expiresAtMs } = facts;
    if (expiresAtMs !== undefined && now >= expiresAtMs) throw new GatewayError("expired_api_key");
    return {
      id,
      namespace,
      name: channel.metadata.name,
      channel,
      agent: this.view.get("Agent", namespace, agentName),
      agentName,
      qpm: channel.spec.qpm,
      tpm: channel.spec.tpm,
      budget: channel.spec.budget,
      keepHistory: channel.spec.keepHistory,
      expiresAtMs,
    };
  }
}
