// The console's client of the gateway's usage API parses the answer with the wire schema the
// gateway serialises it with (@capstan/shared/api usage.ts): rows that fit come back as they are,
// an answer that does not fit is an error (the usage page shows it in words), never a page of
// half-read rows.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { UsageRow } from "@capstan/shared/api";
import { afterEach, describe, expect, it } from "vitest";
import { replicaPolicy } from "./usage.ts";
import { HourlyUsage } from "./usage-hourly.ts";

let server: Server | undefined;
afterEach(async () => {
  await new Promise((r) => server?.close(r));
  server = undefined;
});

/** A stand-in gateway replica whose usage API answers `body`; the client reading it. */
async function gatewayAnswering(body: unknown): Promise<HourlyUsage> {
  server = createServer((_req, res) =>
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body)),
  );
  await new Promise<void>((r) => server?.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return new HourlyUsage(async () => [`http://127.0.0.1:${port}/metrics`], replicaPolicy(undefined));
}

const row: UsageRow = {
  channel: "demo/support",
  hour: "2027-03-31T13",
  agent: "demo/helper",
  upstream: "openai",
  model: "gpt-4o-mini",
  prompt: 30,
  completion: 12,
  requests: 2,
};

describe("HourlyUsage", () => {
  it("returns the rows of an answer that fits the wire schema", async () => {
    const hourly = await gatewayAnswering({ hours: 24, usage: [row] });
    expect(await hourly.read("demo", 24)).toEqual([row]);
  });

  it("refuses an answer that does not fit", async () => {
    const hourly = await gatewayAnswering({ hours: 24, usage: [{ ...row, prompt: "thirty" }] });
    await expect(hourly.read("demo", 24)).rejects.toThrow(/not a usage answer/);
  });
});
