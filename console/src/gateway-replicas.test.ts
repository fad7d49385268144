import { describe, expect, it } from "vitest";
import { metricsUrlsOf, parseServiceRef } from "./gateway-replicas.ts";

const ports = [
  { name: "http", port: 8080 },
  { name: "internal", port: 8090 },
];

describe("the gateway replicas' metrics URLs from EndpointSlices", () => {
  it("gives one URL per pod on the internal port, ready or not, IPv4 first for a dual-stack pod", () => {
    expect(
      metricsUrlsOf(
        [
          {
            addressType: "IPv6",
            ports,
            endpoints: [
              { addresses: ["fd00::1"], targetRef: { uid: "a" } },
              { addresses: ["fd00::3"], targetRef: { uid: "c" } },
            ],
          },
          {
            addressType: "IPv4",
            ports,
            endpoints: [
              { addresses: ["198.18.0.1", "198.18.0.9"], targetRef: { uid: "a" } },
              { addresses: ["198.18.0.2"], targetRef: { uid: "b" } },
            ],
          },
        ],
        "internal",
      ),
    ).toEqual(["http://198.18.0.1:8090/metrics", "http://198.18.0.2:8090/metrics", "http://[fd00::3]:8090/metrics"]);
  });

  it("skips slices without the port, and endpoints without an address", () => {
    expect(
      metricsUrlsOf(
        [
          { addressType: "IPv4", ports: [{ name: "http", port: 8080 }], endpoints: [{ addresses: ["198.18.0.1"] }] },
          { addressType: "IPv4", ports, endpoints: [{ addresses: [] }] },
          { addressType: "IPv4", ports },
        ],
        "internal",
      ),
    ).toEqual([]);
  });

  it("reads <namespace>/<service>", () => {
    expect(parseServiceRef("capstan/capstan-gateway")).toEqual({ namespace: "capstan", name: "capstan-gateway" });
    expect(() => parseServiceRef("capstan-gateway")).toThrow(/<namespace>\/<service>/);
  });
});
