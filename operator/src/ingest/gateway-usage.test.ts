// The operator's client of the gateway's internal API parses each answer with the wire schema the
// gateway serialises it with (@capstan/shared/api usage.ts): an answer that fits is the reading,
// one that does not is no reading (status stays as it was), never a half-read one.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { HttpGatewayUsage } from "./gateway-usage.ts";

let server: Server | undefined;
afterEach(async () => {
  await new Promise((r) => server?.close(r));
  server = undefined;
});

/** A stand-in gateway whose internal API answers `body` on every path; the client reading it. */
async function gatewayAnswering(body: unknown): Promise<HttpGatewayUsage> {
  server = createServer((_req, res) =>
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body)),
  );
  await new Promise<void>((r) => server?.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return new HttpGatewayUsage(() => `http://127.0.0.1:${port}`);
}

const spend = {
  channel: "demo/support",
  period: "2027-03",
  spent: 1.5,
  tokens: 1200,
  resetsAt: "2027-04-01T00:00:00Z",
};
const breaker = {
  agent: "demo/helper",
  upstream: "main",
  model: "gpt-4o-mini",
  circuit: "open",
  since: "2027-03-31T13:00:00Z",
};

describe("HttpGatewayUsage", () => {
  it("reads answers that fit the wire schemas", async () => {
    expect(await (await gatewayAnswering({ budget: spend })).budget("demo/support")).toEqual(spend);
    await new Promise((r) => server?.close(r));
    expect(await (await gatewayAnswering({ upstreams: [breaker] })).upstreams("demo/helper")).toEqual([breaker]);
  });

  it("takes an answer that does not fit as no reading", async () => {
    expect(await (await gatewayAnswering({ budget: { ...spend, spent: "lots" } })).budget("demo/support")).toBe(
      undefined,
    );
    await new Promise((r) => server?.close(r));
    const wrong = { upstreams: [{ ...breaker, circuit: "melted" }] };
    expect(await (await gatewayAnswering(wrong)).upstreams("demo/helper")).toBe(undefined);
  });
});
