import { describe, expect, it } from "vitest";
import { addressRange, denyReason, parseAllowEntry, parseAllowList } from "./policy.ts";

const target = (hostname: string, addresses: string[], port = 80) => ({ hostname, port, addresses });

describe("address classification", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["10.1.2.3", "private"],
    ["172.31.255.255", "private"],
    ["192.168.0.1", "private"],
    ["169.254.169.254", "linkLocal"],
    ["100.64.0.1", "carrierGradeNat"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["224.0.0.1", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["::1", "loopback"],
    ["::", "unspecified"],
    ["fd00::1", "uniqueLocal"],
    ["fe80::1", "linkLocal"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:169.254.169.254", "linkLocal"],
    ["::ffff:10.0.0.1", "private"],
    ["8.8.8.8", "unicast"],
    ["2606:4700::1111", "unicast"],
  ])("%s is %s", (address, range) => {
    expect(addressRange(address)).toBe(range);
  });

  it.each([
    ["::7f00:1", "loopback"], // IPv4-compatible
    ["::a00:1", "private"],
    ["::ffff:0:7f00:1", "loopback"], // SIIT
    ["64:ff9b::a9fe:a9fe", "linkLocal"], // NAT64 well-known prefix
    ["64:ff9b::808:808", "unicast"],
    ["64:ff9b:1::a00:1", "rfc6052"], // local-use NAT64: the embedding depends on the network
    ["2002:7f00:1::", "loopback"], // 6to4
    ["2002:c0a8:101::1", "private"],
    ["2002:808:808::1", "unicast"],
    ["2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"], // Teredo, client 127.0.0.1 inverted
    ["2001:0:4136:e378:8000:63bf:f7f7:f7f7", "unicast"], // client 8.8.8.8
    ["2606:4700::5efe:a00:1", "private"], // ISATAP under a global prefix
    ["2606:4700::200:5efe:7f00:1", "loopback"],
    ["fe80::5efe:808:808", "linkLocal"], // ISATAP under link-local stays link-local
    ["::", "unspecified"],
    ["::1", "loopback"],
  ])("IPv4-embedding %s is classified by its embedded address: %s", (address, range) => {
    expect(addressRange(address)).toBe(range);
  });

  it("an allow-list entry names an embedded address, and an IPv6 embedding prefix stays IPv6", () => {
    expect(denyReason(target("x", ["::7f00:1"]), parseAllowList(["127.0.0.1"]))).toBeUndefined();
    expect(denyReason(target("x", ["64:ff9b::7f00:1"]), parseAllowList(["127.0.0.0/8"]))).toBeUndefined();
    // 2002::/16 allows 6to4 addresses, not every IPv4 address.
    expect(denyReason(target("x", ["2002:7f00:1::"]), parseAllowList(["2002::/16"]))).toBeUndefined();
    expect(denyReason(target("x", ["10.0.0.1"]), parseAllowList(["2002::/16", "64:ff9b::/96"]))).toBeDefined();
  });

  it("refuses IPv6 forms that embed IPv4 (6to4, NAT64, Teredo)", () => {
    for (const a of ["2002:7f00:1::", "64:ff9b::a00:1", "2001:0:4136:e378::1"]) {
      expect(denyReason(target("x", [a]), [])).toBeDefined();
    }
  });

  it("parses numeric host spellings the way browsers do", () => {
    for (const spelling of ["2130706433", "0x7f000001", "017700000001", "0177.0.0.1", "127.1", "0x7f.1"]) {
      const host = new URL(`http://${spelling}/`).hostname;
      expect(host).toBe("127.0.0.1");
      expect(denyReason(target(host, [host]), [])).toContain("loopback");
    }
    expect(new URL("http://0/").hostname).toBe("0.0.0.0");
  });
});

describe("denyReason", () => {
  it("lets public addresses through and names the reason otherwise", () => {
    expect(denyReason(target("example.org", ["93.184.216.34"]), [])).toBeUndefined();
    expect(denyReason(target("metadata", ["169.254.169.254"]), [])).toBe(
      "metadata resolves to 169.254.169.254 (linkLocal)",
    );
  });

  it("refuses a name when any of its addresses is private (rebinding, split answers)", () => {
    expect(denyReason(target("mixed.example", ["93.184.216.34", "10.0.0.1"]), [])).toContain("10.0.0.1");
  });

  it("refuses a name without addresses", () => {
    expect(denyReason(target("nothing.example", []), [])).toContain("no address");
  });

  it("honours allow-list entries: CIDR, IP with port, host, suffix", () => {
    const allow = parseAllowList(["10.0.0.0/8", "127.0.0.1:8080", "docs.internal", "*.svc.cluster.local"]);
    expect(denyReason(target("a", ["10.9.9.9"]), allow)).toBeUndefined();
    expect(denyReason(target("a", ["127.0.0.1"], 8080), allow)).toBeUndefined();
    expect(denyReason(target("a", ["127.0.0.1"], 8081), allow)).toContain("loopback");
    expect(denyReason(target("a", ["::ffff:127.0.0.1"], 8080), allow)).toBeUndefined();
    expect(denyReason(target("docs.internal", ["192.168.1.1"]), allow)).toBeUndefined();
    expect(denyReason(target("docs.internal.evil.com", ["192.168.1.1"]), allow)).toContain("private");
    expect(denyReason(target("web.ns.svc.cluster.local", ["10.96.0.1"]), allow)).toBeUndefined();
    expect(denyReason(target("evilsvc.cluster.local", ["172.16.0.1"]), allow)).toContain("private");
  });

  it("parses bracketed IPv6 entries and mapped CIDRs", () => {
    expect(parseAllowEntry("[::1]:3000")).toMatchObject({ port: 3000 });
    const mapped = parseAllowList(["::ffff:10.0.0.0/104"]);
    expect(denyReason(target("a", ["10.2.3.4"]), mapped)).toBeUndefined();
    expect(denyReason(target("a", ["11.2.3.4"]), mapped)).toBeUndefined();
    expect(denyReason(target("a", ["192.168.0.1"]), mapped)).toContain("private");
  });

  it("rejects malformed entries", () => {
    for (const bad of ["10.0.0.0/99", "a..b", "host:0", "bad host"]) {
      expect(() => parseAllowEntry(bad)).toThrow();
    }
  });
});
