// Who is calling: a SearchKey from the resource view (matched by hashKey(bearer) against
// status.keyHash and still-valid status.previousKeys), scoped to knowledge bases of its own
// namespace, or the internal caller holding CAPSTAN_INTERNAL_TOKEN (the gateway's RAG and
// extractive agents), which names the namespace of the Agent it retrieves for in the
// x-capstan-namespace header and is checked against that namespace's knowledge bases.
// The two are asked for on different listeners: keys on the public port (authenticate), the
// internal token on the internal port only (authenticateInternalCaller), so a leaked token is no
// key from outside the cluster.
import { timingSafeEqual } from "node:crypto";
import { bearerToken, presentedHashes } from "@capstan/shared";
import type { SearchKey } from "@capstan/shared/api";
import type { ResourceView } from "@capstan/shared/resource-view";
import { SearchError } from "../errors.ts";
import { namespaceOf } from "../knowledge-bases.ts";
import { type Cidr, compileRanges, inRanges, parseIp } from "./client-ip.ts";

export type Caller =
  | { kind: "internal"; namespace: string | undefined }
  | {
      kind: "key";
      name: string;
      namespace: string;
      knowledgeIds: ReadonlySet<string>;
      /** spec.permissions: read (search) and/or write (the public documents API); absent: read only. */
      permissions: ReadonlySet<Permission>;
      requestsPerMinute: number;
    };

export type Permission = "read" | "write";

/** The header in which the internal caller names the namespace of the Agent it retrieves for. */
export const NAMESPACE_HEADER = "x-capstan-namespace";
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

interface KeyEntry {
  key: SearchKey;
  /** Set for a previous key: accepted until this time. */
  until?: number;
  ranges: Cidr[] | undefined;
}

export function tokenEquals(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  // Compare equal-length buffers so the time does not depend on where they differ.
  return timingSafeEqual(a.length === b.length ? a : b, b) && a.length === b.length;
}

const time = (t: string | undefined) => (t ? Date.parse(t) : undefined);

export class SearchKeyAuthenticator {
  private byHash: Map<string, KeyEntry> | undefined;
  private readonly view: ResourceView;
  private readonly internalToken: string | undefined;
  private readonly verifierKey: string | undefined;
  private readonly now: () => number;
  private readonly unsubscribe: () => void;

  constructor(opts: {
    view: ResourceView;
    internalToken?: string | undefined;
    /** The operator's HMAC key for user-supplied keys; absent, only generated keys match. */
    verifierKey?: string | undefined;
    now?: () => number;
  }) {
    this.view = opts.view;
    this.verifierKey = opts.verifierKey;
    this.internalToken = opts.internalToken;
    this.now = opts.now ?? Date.now;
    this.unsubscribe = this.view.onChange((e) => {
      if (e.type === "replace" ? e.kind === "SearchKey" : e.resource.kind === "SearchKey") this.byHash = undefined;
    });
  }

  close(): void {
    this.unsubscribe();
  }

  private index(): Map<string, KeyEntry> {
    if (this.byHash) return this.byHash;
    const map = new Map<string, KeyEntry>();
    for (const key of this.view.list("SearchKey")) {
      const ranges = key.spec.allowedCIDRs?.length ? compileRanges(key.spec.allowedCIDRs) : undefined;
      for (const prev of key.status?.previousKeys ?? []) {
        const until = Date.parse(prev.validUntil);
        if (!Number.isNaN(until)) map.set(prev.keyHash, { key, until, ranges });
      }
      if (key.status?.keyHash) map.set(key.status.keyHash, { key, ranges });
    }
    this.byHash = map;
    return map;
  }

  /**
   * The SearchKey calling on the public port, or a SearchError (401 unknown/expired, 403 address
   * not allowed). The internal token is no key here: 401 like any unknown key.
   */
  authenticate(
    authorization: string | string[] | undefined,
    /** request.ip: Fastify's client address under the configured trusted proxies. */
    clientIp: string | undefined,
  ): Caller {
    const token = bearerToken(authorization);
    if (!token) throw new SearchError("SEARCH_ERR_UNAUTHENTICATED");
    const index = this.index();
    const entry = presentedHashes(token, this.verifierKey)
      .map((h) => index.get(h))
      .find((e) => e !== undefined);
    if (!entry) throw new SearchError("SEARCH_ERR_UNAUTHENTICATED");
    const now = this.now();
    const { spec, status } = entry.key;
    if (entry.until !== undefined && now >= entry.until) throw new SearchError("SEARCH_ERR_UNAUTHENTICATED");
    const from = time(spec.validFrom);
    if (from !== undefined && now < from) throw new SearchError("SEARCH_ERR_UNAUTHENTICATED");
    for (const end of [time(spec.validUntil), time(status?.expiresAt)]) {
      if (end !== undefined && now >= end) throw new SearchError("SEARCH_ERR_UNAUTHENTICATED");
    }
    if (entry.ranges) {
      const addr = parseIp(clientIp);
      if (!addr || !inRanges(addr, entry.ranges)) throw new SearchError("SEARCH_ERR_IP_FORBIDDEN");
    }
    return {
      kind: "key",
      name: entry.key.metadata.name,
      namespace: namespaceOf(entry.key),
      knowledgeIds: new Set(spec.knowledgeIds),
      permissions: new Set(spec.permissions ?? ["read"]),
      requestsPerMinute: spec.requestsPerMinute ?? 600,
    };
  }

  /**
   * The internal caller searching on the internal port: the internal token (401 otherwise, and
   * 503 SEARCH_ERR_INTERNAL_DISABLED without one configured), scoped to the namespace it names.
   */
  authenticateInternalCaller(
    authorization: string | string[] | undefined,
    namespaceHeader: string | string[] | undefined,
  ): Caller {
    if (!this.internalToken) throw new SearchError("SEARCH_ERR_INTERNAL_DISABLED");
    const token = bearerToken(authorization);
    if (!token || !tokenEquals(token, this.internalToken)) throw new SearchError("SEARCH_ERR_INTERNAL_AUTH");
    const ns = typeof namespaceHeader === "string" && DNS_LABEL.test(namespaceHeader) ? namespaceHeader : undefined;
    return { kind: "internal", namespace: ns };
  }

  /** Guards the internal documents API: only the internal token. */
  authenticateInternal(authorization: string | string[] | undefined): void {
    if (!this.internalToken) throw new SearchError("SEARCH_ERR_INTERNAL_DISABLED");
    const token = bearerToken(authorization);
    if (!token || !tokenEquals(token, this.internalToken)) throw new SearchError("SEARCH_ERR_INTERNAL_AUTH");
  }
}
