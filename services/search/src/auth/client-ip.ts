// Allow-lists of client addresses, IPv4 and IPv6 (ipaddr.js). Which address is the client's is
// Fastify's to say (request.ip, with trustProxy set to the configured trusted proxies in app.ts:
// the socket's peer, or X-Forwarded-For read from the right past trusted proxies only, so a
// client cannot forge its own address).
import ipaddr from "ipaddr.js";

type Addr = ipaddr.IPv4 | ipaddr.IPv6;
export type Cidr = [Addr, number];

/** Parses an address; IPv4-mapped IPv6 (::ffff:10.0.0.1) becomes IPv4. Undefined when invalid. */
export function parseIp(raw: string | undefined): Addr | undefined {
  if (!raw) return undefined;
  const text = raw
    .trim()
    .replace(/^\[(.*)\]$/, "$1")
    .replace(/%.*$/, "");
  // Strict forms only: "1.2.3" or "0x7f.1" are valid to inet_aton but not in an allow-list.
  const valid = text.includes(":") ? ipaddr.IPv6.isValid(text) : ipaddr.IPv4.isValidFourPartDecimal(text);
  if (!valid) return undefined;
  const addr = ipaddr.parse(text);
  if (addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress()) {
    return (addr as ipaddr.IPv6).toIPv4Address();
  }
  return addr;
}

/** "10.0.0.0/8", "2001:db8::/32", or a single address (as /32 or /128). Throws when invalid. */
export function parseCidr(raw: string): Cidr {
  const text = raw.trim();
  if (text.includes("/")) {
    const [ip, len] = text.split("/");
    if (!parseIp(ip) || !/^\d{1,3}$/.test(len ?? "")) throw new Error(`not a CIDR: ${raw}`);
    const [addr, bits] = ipaddr.parseCIDR(text);
    if (addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
      return [(addr as ipaddr.IPv6).toIPv4Address(), bits - 96];
    }
    return [addr, bits];
  }
  const addr = parseIp(text);
  if (!addr) throw new Error(`not an IP address or CIDR: ${raw}`);
  return [addr, addr.kind() === "ipv4" ? 32 : 128];
}

export function isValidCidr(raw: string): boolean {
  try {
    parseCidr(raw);
    return true;
  } catch {
    return false;
  }
}

export function inRanges(addr: Addr, ranges: Cidr[]): boolean {
  return ranges.some(([net, bits]) => net.kind() === addr.kind() && addr.match(net, bits));
}

/** Compiles allow-list entries, skipping invalid ones (the CRD rejects them; files may not). */
export function compileRanges(entries: string[]): Cidr[] {
  return entries.flatMap((e) => {
    try {
      return [parseCidr(e)];
    } catch {
      return [];
    }
  });
}
