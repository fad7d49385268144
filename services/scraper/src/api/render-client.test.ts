// The API's client of the rendering service parses every answer with the wire schema the service
// serialises it with (render/wire.ts): a page that fits is returned as it came, an answer that does
// not fit is RENDERER_UNAVAILABLE naming the field, and the service's errors keep their code.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRegistry } from "@capstan/shared";
import { afterEach, describe, expect, it } from "vitest";
import { apiMetrics } from "../metrics.ts";
import type { RenderResponse } from "../render/wire.ts";
import { httpRenderClient, type RenderClient } from "./render-client.ts";

let server: Server | undefined;
let client: RenderClient | undefined;
afterEach(async () => {
  await client?.close();
  await new Promise((r) => server?.close(r));
  server = client = undefined;
});

/** A stand-in rendering service that answers every POST /scrape with `status` and `body`. */
async function renderer(status: number, body: unknown): Promise<RenderClient> {
  server = createServer((_req, res) => {
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  });
  await new Promise<void>((r) => server?.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  client = httpRenderClient(`http://127.0.0.1:${port}`, apiMetrics(createRegistry({ defaultMetrics: false })));
  return client;
}

const page: RenderResponse = {
  content: "<p>hi</p>",
  pageStatusCode: 200,
  pageError: null,
  finalUrl: "https://example.com/",
  contentType: "text/html",
  screenshot: null,
  blockedRequests: 0,
};

describe("httpRenderClient", () => {
  it("returns a page that fits the wire schema", async () => {
    const c = await renderer(200, page);
    expect(await c.render({ url: "https://example.com/" }, new AbortController().signal)).toEqual(page);
  });

  it("refuses an answer that does not fit, naming the field", async () => {
    const c = await renderer(200, { ...page, pageStatusCode: "200" });
    await expect(c.render({ url: "https://example.com/" }, new AbortController().signal)).rejects.toMatchObject({
      code: "RENDERER_UNAVAILABLE",
      message: expect.stringContaining("pageStatusCode"),
    });
  });

  it("keeps the rendering service's own error code", async () => {
    const c = await renderer(400, { success: false, error: "url: Invalid input", code: "BAD_REQUEST" });
    await expect(c.render({ url: "x" }, new AbortController().signal)).rejects.toMatchObject({ code: "BAD_REQUEST" });
  });
});
