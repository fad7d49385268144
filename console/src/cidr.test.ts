import { isIP } from "node:net";
import { describe, expect, it } from "vitest";
import { isIpOrCidr } from "./cidr.ts";

describe("IP and CIDR validation of the search-key form", () => {
  it("accepts what the CRD accepts", () => {
    for (const ok of [
      "10.0.0.0/8",
      "192.168.1.7",
      "0.0.0.0/0",
      "2001:db8::/32",
      "::1",
      "::ffff:10.0.0.1",
      "fe80::1/128",
    ]) {
      expect(isIpOrCidr(ok), ok).toBe(true);
    }
  });
  it("refuses the rest", () => {
    for (const bad of [
      "10.0.0.0/33",
      "256.1.1.1",
      "10.0.0",
      "2001:db8::/129",
      "1:2:3:4:5:6:7:8:9",
      "a::b::c",
      "10.0.0.1/",
      "x",
      "10.0.0.0/8/1",
      "",
    ]) {
      expect(isIpOrCidr(bad), bad).toBe(false);
    }
  });
  it("agrees with node:net on plain addresses", () => {
    for (const a of ["1.2.3.4", "01.2.3.4", "::", "1::", "::1:2:3:4:5:6:7", "1:2:3:4:5:6:7::", "12345::"]) {
      expect(isIpOrCidr(a), a).toBe(isIP(a) !== 0);
    }
  });
});
