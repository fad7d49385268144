// The SSRF guard at work: resolves a target's host name, decides on the resolved addresses
// (policy.ts) and connects to exactly the address it checked, so a DNS answer that changes
// between check and connect (rebinding) cannot redirect the connection. Every outbound HTTP
// request of the rendering service goes through guard.dispatcher().
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { Agent, buildConnector, type Dispatcher, ProxyAgent } from "undici";
import { ScraperError } from "../errors.ts";
import { type AllowEntry, defaultPort, denyReason, normaliseHost, parseAllowList } from "./policy.ts";

export type Resolver = (hostname: string) => Promise<string[]>;

export interface GuardOptions {
  allowedHosts: readonly string[];
  dnsTimeoutMs?: number;
  /** Host name resolution; default the system resolver (getaddrinfo). */
  resolve?: Resolver;
  /** Called for every refused target, before any connection is attempted. */
  onBlocked?: (stage: string, url: string, reason: string) => void;
}

const systemResolve: Resolver = async (hostname) => (await lookup(hostname, { all: true })).map((a) => a.address);

/** Parses a scrape target: http(s) only, with a host. Throws BAD_URL. */
export function parseTargetUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ScraperError("BAD_URL", [`'${raw.slice(0, 200)}' is not an absolute URL`]);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ScraperError("BAD_URL", [`scheme ${url.protocol} is not supported (http and https only)`]);
  }
  if (!url.hostname) throw new ScraperError("BAD_URL", ["missing host"]);
  return url;
}

export class SsrfGuard {
  readonly allow: readonly AllowEntry[];
  private readonly resolver: Resolver;
  private readonly dnsTimeoutMs: number;
  private readonly onBlocked: GuardOptions["onBlocked"];

  constructor(opts: GuardOptions) {
    this.allow = parseAllowList(opts.allowedHosts);
    this.resolver = opts.resolve ?? systemResolve;
    this.dnsTimeoutMs = opts.dnsTimeoutMs ?? 5_000;
    this.onBlocked = opts.onBlocked;
  }

  async resolve(hostname: string): Promise<string[]> {
    const host = normaliseHost(hostname);
    if (isIP(host)) return [host];
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new ScraperError("UNREACHABLE", [`DNS lookup of ${host} timed out`])),
        this.dnsTimeoutMs,
      );
    });
    try {
      return await Promise.race([this.resolver(host), timeout]);
    } catch (err) {
      if (err instanceof ScraperError) throw err;
      throw new ScraperError("UNREACHABLE", [`cannot resolve ${host}`]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Resolves and decides; returns the addresses that may be connected to, or throws BLOCKED_TARGET. */
  async check(url: URL, stage: string, port?: number): Promise<string[]> {
    const targetPort = port ?? (url.port ? Number(url.port) : defaultPort(url.protocol));
    const host = normaliseHost(url.hostname);
    const addresses = await this.resolve(host);
    const reason = denyReason({ hostname: host, port: targetPort, addresses }, this.allow);
    if (reason) throw this.refuse(stage, `${url.protocol}//${url.host}`, reason);
    return addresses;
  }

  /** Refuses a target for a reason of its own (a redirect to another scheme): counted and logged like the rest. */
  refuse(stage: string, target: string, reason: string): ScraperError {
    this.onBlocked?.(stage, target, reason);
    return new ScraperError("BLOCKED_TARGET", [reason]);
  }

  /** An undici connector that checks the target and connects to the checked address. */
  connector(): buildConnector.connector {
    const inner = buildConnector({ timeout: 10_000 });
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

  /**
   * The dispatcher for outbound requests. With an upstream proxy the proxy resolves names, so
   * the guard checks the target before the request (callers use check()) and the connection
   * goes to the operator-configured proxy.
   */
  dispatcher(proxy?: { server?: string | undefined; username?: string | undefined; password?: string | undefined }) {
    const common = { connections: 64, keepAliveTimeout: 4_000, headersTimeout: 30_000, bodyTimeout: 30_000 };
    if (proxy?.server) {
      const token =
        proxy.username !== undefined
          ? `Basic ${Buffer.from(`${proxy.username}:${proxy.password ?? ""}`).toString("base64")}`
          : undefined;
      return new ProxyAgent({ uri: proxy.server, ...(token ? { token } : {}), ...common }) as Dispatcher;
    }
    return new Agent({ ...common, connect: this.connector() }) as Dispatcher;
  }
}
