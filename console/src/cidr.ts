// IP addresses and CIDRs as a SearchKey's allowedCIDRs accepts them (the CRD checks the same with
// CEL's isIP/isCIDR): pure functions, used by the page's form and by the console's API alike.

function ipv4(s: string): boolean {
  const parts = s.split(".");
  return parts.length === 4 && parts.every((p) => /^(0|[1-9][0-9]{0,2})$/.test(p) && Number(p) <= 255);
}

function ipv6(s: string): boolean {
  if (!/^[0-9a-fA-F:.]+$/.test(s) || s.includes(":::")) return false;
  const halves = s.split("::");
  if (halves.length > 2) return false;
  const groups = (h: string) => (h === "" ? [] : h.split(":"));
  const all = halves.flatMap(groups);
  // An embedded IPv4 tail (::ffff:10.0.0.1) counts as two groups.
  const last = all.at(-1);
  const tailV4 = last?.includes(".") ? ipv4(last) : false;
  if (last?.includes(".") && !tailV4) return false;
  const hex = tailV4 ? all.slice(0, -1) : all;
  if (!hex.every((g) => /^[0-9a-fA-F]{1,4}$/.test(g))) return false;
  const count = hex.length + (tailV4 ? 2 : 0);
  return halves.length === 2 ? count < 8 : count === 8;
}

/** An IP address (v4 or v6) or a CIDR (address/prefix). */
export function isIpOrCidr(value: string): boolean {
  const [addr, prefix, extra] = value.trim().split("/");
  if (!addr || extra !== undefined) return false;
  const v4 = ipv4(addr);
  if (!v4 && !ipv6(addr)) return false;
  if (prefix === undefined) return true;
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefix)) return false;
  return Number(prefix) <= (v4 ? 32 : 128);
}

/** The entries of a comma- or newline-separated list that are not IPs or CIDRs. */
export function badCidrs(list: string[]): string[] {
  return list.filter((c) => !isIpOrCidr(c));
}
