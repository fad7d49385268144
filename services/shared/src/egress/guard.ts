// The egress guard: one address policy (policy.ts) for every outbound call a tenant can aim (the
// scraper's targets, an Agent's provider baseURL, search's embedding and rerank endpoints). It
// resolves a target's host name, decides on the resolved addresses and connects to exactly the
// address it checked, so a DNS answer that changes between check and connect (rebinding) cannot
// redirect the connection. Loopback, private, link-local (cloud metadata), CGNAT, cluster and
// other non-global ranges are refused unless the allow-list (hosts, IPs or CIDRs, optionally with
// a port) names them. Services map EgressRefused to their own error registries.
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { Agent, buildConnector } from "undici";
import {
  type AllowEntry,
  type Denial,
  defaultPort,
  denial,
  describeDenial,
  normaliseHost,
  parseAllowList,
} from "./policy.ts";

export type Resolver = (hostname: string) => Promise<string[]>;

/**
 * A target the policy refuses. `reason` names the host, the address and its range (for logs);
 * `rule` names the host and the range only, for answers to a tenant, who must not learn through
 * the platform what an in-cluster name resolves to.
 */
export class EgressRefused extends Error {
  readonly reason: string;
  readonly rule: string;
  constructor(reason: string, rule = reason) {
    super(`refused by the egress policy: ${reason}`);
    this.name = "EgressRefused";
    this.reason = reason;
    this.rule = rule;
  }
}

/** A denial as the rule a tenant may be told: the host and the range, not the address. */
export function ruleOf(d: Denial): string {
  return d.address === undefined
    ? `${d.host} has no address`
    : `${d.host} is in the ${d.range} range, which is not allowed unless listed in the egress allow-list`;
}

/** A host name that could not be resolved (or not in time). */
export class EgressUnresolved extends Error {
  constructor(detail: string) {
    super(detail);
    this.name = "EgressUnresolved";
  }
}

export interface EgressGuardOptions {
  /** Hosts, `*.suffix`, IPs or CIDRs (each optionally `:port`) that may be reached although not public. */
  allowedHosts: readonly string[];
  dnsTimeoutMs?: number;
  /** Host name resolution; default the system resolver (getaddrinfo). */
  resolve?: Resolver;
  /** Called for every refused target, before any connection is attempted. */
  onBlocked?: (stage: string, url: string, reason: string) => void;
}

const systemResolve: Resolver = async (hostname) => (await lookup(hostname, { all: true })).map((a) => a.address);

export class EgressGuard {
  readonly allow: readonly AllowEntry[];
  private readonly resolver: Resolver;
  private readonly dnsTimeoutMs: number;
  private readonly onBlocked: EgressGuardOptions["onBlocked"];

  constructor(opts: EgressGuardOptions) {
    this.allow = parseAllowList(opts.allowedHosts);
    this.resolver = opts.resolve ?? systemResolve;
    this.dnsTimeoutMs = opts.dnsTimeoutMs ?? 5_000;
    this.onBlocked = opts.onBlocked;
  }

  /** The error for a refused target (subclasses return their own registry's). */
  protected refused(reason: string, rule: string): Error {
    return new EgressRefused(reason, rule);
  }

  /** The error for a host that does not resolve (subclasses return their own registry's). */
  protected unresolved(detail: string): Error {
    return new EgressUnresolved(detail);
  }

  async resolve(hostname: string): Promise<string[]> {
    const host = normaliseHost(hostname);
    if (isIP(host)) return [host];
    let timer: NodeJS.Timeout | undefined;
    const timedOut = Symbol("timed out");
    const timeout = new Promise<typeof timedOut>((resolve) => {
      timer = setTimeout(() => resolve(timedOut), this.dnsTimeoutMs);
    });
    let answer: string[] | typeof timedOut;
    try {
      answer = await Promise.race([this.resolver(host), timeout]);
    } catch {
      throw this.unresolved(`cannot resolve ${host}`);
    } finally {
      clearTimeout(timer);
    }
    if (answer === timedOut) throw this.unresolved(`DNS lookup of ${host} timed out`);
    return answer;
  }

  /** Resolves and decides; returns the addresses that may be connected to, or throws the refusal. */
  async check(url: URL, stage: string, port?: number): Promise<string[]> {
    const targetPort = port ?? (url.port ? Number(url.port) : defaultPort(url.protocol));
    const host = normaliseHost(url.hostname);
    const addresses = await this.resolve(host);
    const d = denial({ hostname: host, port: targetPort, addresses }, this.allow);
    if (d) throw this.refuse(stage, `${url.protocol}//${url.host}`, describeDenial(d), ruleOf(d));
    return addresses;
  }

  /** Refuses a target for a reason of its own (a redirect to another scheme): counted and logged like the rest. */
  refuse(stage: string, target: string, reason: string, rule = reason): Error {
    this.onBlocked?.(stage, target, reason);
    return this.refused(reason, rule);
  }

  /** An undici connector that checks the target and connects to the checked address. */
  connector(timeoutMs = 10_000): buildConnector.connector {
    const inner = buildConnector({ timeout: timeoutMs });
    return (options, callback) => {
      const host = normaliseHost(options.hostname);
      const protocol = options.protocol || "http:";
      const port = options.port ? Number(options.port) : defaultPort(protocol);
      const url = new URL(`${protocol}//${isIP(host) === 6 ? `[${host}]` : host}:${port}/`);
      this.check(url, "connect", port).then(
        (addresses) => {
          const address = addresses[0] as string;
          const servername = options.servername ?? (isIP(host) ? undefined : host);
          inner({ ...options, hostname: address, ...(servername ? { servername } : {}) }, callback);
        },
        (err: Error) => callback(err, null),
      );
    };
  }

  /** A pooled undici Agent whose every connection goes through the guard. */
  agent(opts: Omit<Agent.Options, "connect"> = {}): Agent {
    return new Agent({ ...opts, connect: this.connector() });
  }
}

/** The error an outbound call failed with, when the guard refused it (undici may wrap it as a cause). */
export function egressRefusal(err: unknown): EgressRefused | undefined {
  for (let e: unknown = err, i = 0; e && i < 4; e = (e as { cause?: unknown }).cause, i++) {
    if (e instanceof EgressRefused) return e;
  }
  return undefined;
}
