// IP addresses and CIDRs as a SearchKey's allowedCIDRs accepts them (the CRD checks the same with
// CEL's isIP/isCIDR), by zod's IP and CIDR formats: used by the page's form and by the console's
// API alike (the page's bundle carries zod already: this made it 436 bytes smaller).
import { z } from "zod";

const ipOrCidr = z.union([z.ipv4(), z.ipv6(), z.cidrv4(), z.cidrv6()]);

/** An IP address (v4 or v6) or a CIDR (address/prefix). */
export function isIpOrCidr(value: string): boolean {
  return ipOrCidr.safeParse(value.trim()).success;
}

/** The entries of a comma- or newline-separated list that are not IPs or CIDRs. */
export function badCidrs(list: string[]): string[] {
  return list.filter((c) => !isIpOrCidr(c));
}
