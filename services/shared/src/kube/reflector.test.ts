import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { kubeconfigAccess } from "./access.ts";
import { fullJitterBackoff } from "./reflector.ts";

describe("fullJitterBackoff", () => {
  it("is uniform in [0, min(max, base·2^attempt))", () => {
    expect(fullJitterBackoff(1, 800, 30_000, () => 0)).toBe(0);
    expect(fullJitterBackoff(1, 800, 30_000, () => 0.999999)).toBe(1599);
    expect(fullJitterBackoff(3, 800, 30_000, () => 0.5)).toBe(3200);
    expect(fullJitterBackoff(10, 800, 30_000, () => 0.999999)).toBe(29_999);
    expect(fullJitterBackoff(10_000, 800, 30_000, () => 0.5)).toBe(15_000);
  });
  it("spreads many reconnects instead of synchronising them", () => {
    let seed = 42;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const delays = Array.from({ length: 1000 }, () => fullJitterBackoff(5, 800, 30_000, random));
    expect(Math.min(...delays)).toBeLessThan(1000);
    expect(Math.max(...delays)).toBeGreaterThan(24_000);
    expect(new Set(delays).size).toBeGreaterThan(900);
  });
});

describe("kubeconfigAccess", () => {
  it("reads the current context's server, CA, client certificate and token", () => {
    const dir = mkdtempSync(join(tmpdir(), "kc-"));
    writeFileSync(join(dir, "ca.crt"), "CA");
    const path = join(dir, "config");
    writeFileSync(
      path,
      `apiVersion: v1
kind: Config
current-context: b
contexts:
- name: a
  context: {cluster: one, user: u1}
- name: b
  context: {cluster: two, user: u2, namespace: team}
clusters:
- name: one
  cluster: {server: "https://one:6443"}
- name: two
  cluster: {server: "https://two:6443", certificate-authority: ca.crt}
users:
- name: u1
  user: {token: nope}
- name: u2
  user: {token: secret-token, client-certificate-data: ${Buffer.from("CERT").toString("base64")}}
`,
    );
    const a = kubeconfigAccess(path);
    expect(a.server).toBe("https://two:6443");
    expect(a.ca?.toString()).toBe("CA");
    expect(a.cert?.toString()).toBe("CERT");
    expect(a.token?.()).toBe("secret-token");
    expect(a.namespace).toBe("team");
  });
});
