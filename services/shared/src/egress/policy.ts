// SSRF policy, pure: which addresses a scrape may reach. Only globally routable unicast
// addresses pass; loopback, private, link-local (cloud metadata), CGNAT, multicast, reserved,
// IPv6 ULA/link-local are refused unless an allow-list entry (host, IP or CIDR, optionally with a
// port) names them. An IPv6 form that embeds an IPv4 address is judged by that address.
import ipaddr from "ipaddr.js";

export interface AllowEntry {
  /** Exact host name, or a suffix when it starts with "." (from "*.x" or ".x"). */
  host?: string;
  cidr?: [ipaddr.IPv4 | ipaddr.IPv6, number];
  port?: number;
  raw: string;
}

export class AllowListError extends Error {}

const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);

/** True for an ISATAP interface identifier (RFC 5214): ::0:5efe:a.b.c.d, with the u/g bits free. */
function isIsatap(parts: number[]): boolean {
  return ((parts[4] as number) & 0xfcff) === 0 && parts[5] === 0x5efe;
}

/**
 * The IPv4 address an IPv6 address carries, for every form that reaches an IPv4 host through it:
 * IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d, deprecated but still routed by some
 * stacks), SIIT (::ffff:0:a.b.c.d), NAT64's well-known prefix (64:ff9b::/96), 6to4
 * (2002:AABB:CCDD::/48), Teredo (the client address, bit-inverted in the last 32 bits) and ISATAP
 * (an interface identifier of 0:5efe or 200:5efe). `::` and `::1` are IPv6's own.
 */
export function embeddedIPv4(addr: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const p = addr.parts as number[];
  const [a, b, c, d, e, f, g, h] = p as [number, number, number, number, number, number, number, number];
  const zeros = (n: number) => p.slice(0, n).every((x) => x === 0);
  if (zeros(5) && f === 0xffff) return v4(g, h); // mapped
  if (zeros(6) && (g !== 0 || h > 1)) return v4(g, h); // compatible
  if (zeros(4) && e === 0xffff && f === 0) return v4(g, h); // SIIT
  if (a === 0x64 && b === 0xff9b && c === 0 && d === 0 && e === 0 && f === 0) return v4(g, h); // NAT64
  if (a === 0x2002) return v4(b, c); // 6to4
  if (a === 0x2001 && b === 0) return v4(g ^ 0xffff, h ^ 0xffff); // Teredo client
  if (isIsatap(p)) return v4(g, h);
  return undefined;
}

/** An address as it is classified and matched: the IPv4 address inside an IPv4-embedding IPv6 one. */
function normaliseAddress(addr: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  if (addr.kind() !== "ipv6") return addr;
  const v6 = addr as ipaddr.IPv6;
  const inner = embeddedIPv4(v6);
  // An ISATAP identifier under a non-global prefix (link-local, documentation) stays what the prefix is.
  if (!inner || (isIsatap(v6.parts as number[]) && v6.range() !== "unicast")) return addr;
  return inner;
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
      // ::ffff:10.0.0.0/104 is 10.0.0.0/8 once unmapped; other IPv6 networks stay IPv6 (an
      // embedding prefix such as 2002::/16 is not an IPv4 network).
      if (addr.kind() === "ipv6" && bits >= 96 && (addr as ipaddr.IPv6).isIPv4MappedAddress()) {
        return { ...base, cidr: [(addr as ipaddr.IPv6).toIPv4Address(), bits - 96] };
      }
      return { ...base, cidr: [addr, bits] };
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

/** The first entry of an allow-list that does not parse, as a message; undefined when all do. */
export function allowListProblem(entries: readonly string[]): string | undefined {
  for (const e of entries) {
    try {
      parseAllowEntry(e);
    } catch (err) {
      return (err as Error).message;
    }
  }
  return undefined;
}

/**
 * The range name of an address ("unicast" for globally routable ones). An IPv6 address that
 * embeds an IPv4 one is classified by the embedded address (::7f00:1 is "loopback"); NAT64's
 * local-use prefix 64:ff9b:1::/48, whose embedding depends on the network, stays "rfc6052".
 */
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
  const raw = ipaddr.parse(address);
  const [net, bits] = entry.cidr;
  return [raw, normaliseAddress(raw)].some((addr) => addr.kind() === net.kind() && addr.match(net, bits));
}

export interface Target {
  hostname: string;
  port: number;
  /** Every address the host name resolved to (the literal itself for an IP host). */
  addresses: string[];
}

/** Why a target may not be reached: its host, the refused address and that address's range (the rule). */
export interface Denial {
  host: string;
  /** Absent when the host has no address at all. */
  address?: string;
  /** The range rule that refused it ("loopback", "private", "linkLocal", ...), or "no address". */
  range: string;
}

/** Undefined when the target may be reached; otherwise why it may not. */
export function denial(target: Target, allow: readonly AllowEntry[]): Denial | undefined {
  const host = normaliseHost(target.hostname);
  const portOk = (e: AllowEntry) => e.port === undefined || e.port === target.port;
  if (allow.some((e) => portOk(e) && hostMatches(e, host))) return undefined;
  if (target.addresses.length === 0) return { host, range: "no address" };
  for (const address of target.addresses) {
    if (allow.some((e) => portOk(e) && addressMatches(e, address))) continue;
    const range = addressRange(address);
    if (range !== "unicast") return { host, address, range };
  }
  return undefined;
}

/** A denial in words, with the address (for logs and the scraper's own operators). */
export function describeDenial(d: Denial): string {
  return d.address === undefined ? `${d.host} has no address` : `${d.host} resolves to ${d.address} (${d.range})`;
}

/** Undefined when the target may be reached; otherwise the reason it may not. */
export function denyReason(target: Target, allow: readonly AllowEntry[]): string | undefined {
  const d = denial(target, allow);
  return d && describeDenial(d);
}

export function defaultPort(protocol: string): number {
  return protocol === "https:" ? 443 : 80;
}
