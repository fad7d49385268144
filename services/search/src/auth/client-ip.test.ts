import { describe, expect, it } from "vitest";
import { compileRanges, inRanges, isValidCidr, parseCidr, parseIp } from "./client-ip.ts";

const addr = (s: string) => parseIp(s) as NonNullable<ReturnType<typeof parseIp>>;

describe("allow-lists", () => {
  it("matches IPv4 and IPv6 CIDRs and single addresses", () => {
    const ranges = compileRanges(["10.0.0.0/8", "192.168.1.7", "2001:db8::/32", "::1"]);
    expect(inRanges(addr("10.20.30.40"), ranges)).toBe(true);
    expect(inRanges(addr("11.0.0.1"), ranges)).toBe(false);
    expect(inRanges(addr("192.168.1.7"), ranges)).toBe(true);
    expect(inRanges(addr("192.168.1.8"), ranges)).toBe(false);
    expect(inRanges(addr("2001:db8:1::5"), ranges)).toBe(true);
    expect(inRanges(addr("2001:db9::5"), ranges)).toBe(false);
    expect(inRanges(addr("::1"), ranges)).toBe(true);
  });

  it("treats IPv4-mapped IPv6 as IPv4", () => {
    expect(parseIp("::ffff:10.1.2.3")?.kind()).toBe("ipv4");
    expect(inRanges(addr("::ffff:10.1.2.3"), compileRanges(["10.0.0.0/8"]))).toBe(true);
  });

  it("rejects what is not an address or CIDR", () => {
    expect(isValidCidr("10.0.0.0/33")).toBe(false);
    expect(isValidCidr("example.com")).toBe(false);
    expect(() => parseCidr("1.2.3")).toThrow();
    expect(compileRanges(["nope", "10.0.0.0/8"])).toHaveLength(1);
  });
});
