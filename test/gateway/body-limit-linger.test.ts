// A body over the gateway's limit is answered 413 while the client is still sending it. Before,
// Fastify closed the connection at once, the kernel reset it over the unread rest, and a proxy in
// front lost the answer: through the e2e node's ingress a 5 MiB chat came back as Traefik's
// "502 Bad Gateway" (test/e2e/hostile-network.test.ts). Now the connection stays open, the rest
// is read and dropped (services/shared/src/linger.ts), the 413 is the OpenAI error object, and the
// same connection serves the next request, as it does through a proxy's pool.
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addResources, emptyView, type RunningGateway, startGateway, uniqueNamespace } from "./helpers.ts";

let gw: RunningGateway;
let key: string;
const LIMIT = 64 * 1024;

beforeAll(async () => {
  const view = emptyView();
  // The key is checked before the body is read: only an authorised request reaches the limit.
  const keys = addResources(
    view,
    uniqueNamespace(),
    [{ name: "c", agent: "a" }],
    [{ name: "a", spec: { provider: { baseURL: "http://127.0.0.1:9/v1", model: "m" } } }],
  );
  key = keys.c as string;
  gw = await startGateway({ bodyLimitBytes: LIMIT }, { view });
});
afterAll(async () => {
  await gw?.close();
});

/**
 * Two requests on one connection, written as a proxy forwards them (Node's own HTTP client stops
 * sending a body once its answer came, so a raw socket stands in): `bytes` of body for the first,
 * then a 2-byte body. Resolves with what came back once the second answer or the connection's end
 * arrived.
 */
function twoOnOneConnection(bytes: number): Promise<{ text: string; closed: boolean }> {
  const url = new URL(gw.url);
  const head = (n: number) =>
    `POST /api/v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${key}\r\n` +
    `content-type: application/json\r\ncontent-length: ${n}\r\n\r\n`;
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    let text = "";
    const done = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed });
    };
    const timer = setTimeout(() => done(false), 20_000);
    socket.on("data", (d: Buffer) => {
      text += d.toString("latin1");
      if ((text.match(/HTTP\/1\.1 \d{3}/g) ?? []).length >= 2) done(false);
    });
    socket.on("error", () => done(true));
    socket.on("close", () => done(true));
    socket.write(head(bytes));
    socket.write(Buffer.alloc(bytes, " "), () => socket.write(`${head(2)}  `));
  });
}

describe("a body over the limit", () => {
  it("is answered 413 on a connection that stays open, and the next request on it is answered", async () => {
    const { text, closed } = await twoOnOneConnection(80 * LIMIT);
    const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
    expect(statuses[0], text.slice(0, 300)).toBe(413);
    expect(text).toContain('"code":"request_too_large"');
    const first = text.slice(0, text.indexOf("HTTP/1.1", 1) >>> 0);
    expect(first.toLowerCase()).not.toContain("connection: close");
    // The rest of the big body was read and dropped, so the second request was parsed and answered
    // (400: two spaces are not JSON) on the same connection.
    expect(statuses[1], `the connection ${closed ? "closed" : "stayed silent"} after the 413`).toBe(400);
  });
});
