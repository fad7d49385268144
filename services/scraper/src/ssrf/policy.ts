// SSRF policy, pure: which addresses a scrape may reach. Only globally routable unicast
// addresses pass; loopback, private, link-local (cloud metadata), CGNAT, multicast, reserved,
// IPv6 ULA/link-local and every IPv6 form that embeds an IPv4 address are refused unless an
// allow-list entry (host, IP or CIDR, optionally with a port) names them.
import ipaddr from "ipaddr.js";

export interface AllowEntry {
  /** Exact host name, or a suffix when it starts with "." (from "*.x" or ".x"). */
  host?: string;
  cidr?: [ipaddr.IPv4 | ipaddr.IPv6, number];
  port?: number;
  raw: string;
}

export class AllowListError extends Error {}

function normaliseAddress(addr: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  if (addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress()) {
    return (addr as ipaddr.IPv6).toIPv4Address();
  }
  return addr;
}

/** Parses one allow-list entry: `host`, `*.suffix`, `1.2.3.4`, `10.0.0.0/8`, `[::1]`, with optional `:port`. */
export function parseAllowEntry(raw: string): AllowEntry {
  let text = raw.trim().toLowerCase();
  let port: number | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracketed) {
    text = bracketed[1] as string;
    if (bracketed[2]) port = Number(bracketed[2]);
  } else {
    const withPort = /^([^:/]+(?:\/\d+)?):(\d+)$/.exec(text);
    if (withPort) {
      text = withPort[1] as string;
      port = Number(withPort[2]);
    }
  }
  if (port !== undefined && (port < 1 || port > 65535)) throw new AllowListError(`bad port in '${raw}'`);
  const base = port === undefined ? { raw } : { raw, port };
  if (text.includes("/")) {
    try {
      const [addr, bits] = ipaddr.parseCIDR(text);
      const net = normaliseAddress(addr);
      // ::ffff:10.0.0.0/104 is 10.0.0.0/8 once unmapped.
      return { ...base, cidr: [net, net.kind() !== addr.kind() ? Math.max(0, bits - 96) : bits] };
    } catch {
      throw new AllowListError(`bad CIDR '${raw}'`);
    }
  }
  if (ipaddr.isValid(text)) {
    const addr = normaliseAddress(ipaddr.parse(text));
    return { ...base, cidr: [addr, addr.kind() === "ipv4" ? 32 : 128] };
  }
  const host = text.startsWith("*.") ? text.slice(1) : text;
  if (!/^\.?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$/.test(host)) {
    throw new AllowListError(`bad host '${raw}'`);
  }
  return { ...base, host: host.replace(/\.$/, "") };
}

export function parseAllowList(entries: readonly string[]): AllowEntry[] {
  return entries.map(parseAllowEntry);
}

/** The range name of an address ("unicast" for globally routable ones), after unmapping IPv4-mapped IPv6. */
export function addressRange(address: string): string {
  if (!ipaddr.isValid(address)) return "invalid";
  const addr = normaliseAddress(ipaddr.parse(address));
  return addr.range();
}

export function isPublicAddress(address: string): boolean {
  return addressRange(address) === "unicast";
}

/** Strips IPv6 brackets and a trailing dot, lowercases. */
export function normaliseHost(hostname: string): string {
  return hostname
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "")
    .toLowerCase();
}

function hostMatches(entry: AllowEntry, host: string): boolean {
  if (!entry.host) return false;
  return entry.host.startsWith(".") ? host.endsWith(entry.host) || host === entry.host.slice(1) : host === entry.host;
}

function addressMatches(entry: AllowEntry, address: string): boolean {
  if (!entry.cidr || !ipaddr.isValid(address)) return false;
  const addr = normaliseAddress(ipaddr.parse(address));
  const [net, bits] = entry.cidr;
  return addr.kind() === net.kind() && addr.match(net, bits);
}

export interface Target {
  hostname: string;
  port: number;
  /** Every address the host name resolved to (the literal itself for an IP host). */
  addresses: string[];
}

/** Undefined when the target may be reached; otherwise the reason it may not. */
export function denyReason(target: Target, allow: readonly AllowEntry[]): string | undefined {
  const host = normaliseHost(target.hostname);
  const portOk = (e: AllowEntry) => e.port === undefined || e.port === target.port;
  if (allow.some((e) => portOk(e) && hostMatches(e, host))) return undefined;
  if (target.addresses.length === 0) return `${host} has no address`;
  for (const address of target.addresses) {
    if (allow.some((e) => portOk(e) && addressMatches(e, address))) continue;
    const range = addressRange(address);
    if (range !== "unicast") return `${host} resolves to ${address} (${range})`;
  }
  return undefined;
}

export function defaultPort(protocol: string): number {
  return protocol === "https:" ? 443 : 80;
}
