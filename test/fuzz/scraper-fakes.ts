// The scraper's outside dependencies for its fuzz test, as loopback fakes speaking their real
// wire protocols, so every documented feature is configured and nothing answers 501:
//  - an OpenAI-compatible provider: /v1/chat/completions answers an empty JSON object as the
//    extraction (whatever the prompt and schema), /v1/embeddings a fixed 2-d vector per input;
//  - a SearXNG-compatible metasearch service: GET /search?q=…&format=json lists the local site's
//    page, so a search with scrape: true renders it.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ScraperFakes {
  /** The provider's base URL, as LLM_BASE_URL: <origin>/v1. */
  llmBaseURL: string;
  /** The metasearch service's origin, as SEARCH_ENDPOINT. */
  searchEndpoint: string;
  close(): Promise<void>;
}

async function readJson(req: IncomingMessage): Promise<{ model?: string; input?: unknown }> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return {};
  }
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const close = (server: Server) => new Promise<void>((r) => server.close(() => r()));

export async function startScraperFakes(siteOrigin: string): Promise<ScraperFakes> {
  const provider = createServer(async (req, res) => {
    const body = await readJson(req);
    res.writeHead(req.url?.startsWith("/v1/") ? 200 : 404, { "content-type": "application/json" });
    if (req.url === "/v1/chat/completions") {
      const message = { role: "assistant", content: "{}" };
      const choice = { index: 0, message, finish_reason: "stop" };
      const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
      res.end(
        JSON.stringify({
          id: "chatcmpl-1",
          object: "chat.completion",
          created: 1,
          model: body.model,
          choices: [choice],
          usage,
        }),
      );
    } else if (req.url === "/v1/embeddings") {
      const inputs = Array.isArray(body.input) ? body.input : [body.input];
      const data = inputs.map((_, index) => ({ object: "embedding", index, embedding: [1, 0] }));
      res.end(JSON.stringify({ object: "list", data, model: body.model }));
    } else {
      res.end(
        JSON.stringify({ error: { message: "not found", type: "invalid_request_error", param: null, code: null } }),
      );
    }
  });
  const searx = createServer((req, res) => {
    const query = new URL(req.url ?? "/", "http://x").searchParams.get("q");
    res.writeHead(200, { "content-type": "application/json" });
    const results = [{ url: `${siteOrigin}/page`, title: "Fuzz page", content: "A page to scrape", engine: "bing" }];
    res.end(JSON.stringify({ query, results }));
  });
  const [providerOrigin, searchEndpoint] = [await listen(provider), await listen(searx)];
  return {
    llmBaseURL: `${providerOrigin}/v1`,
    searchEndpoint,
    close: async () => {
      provider.closeAllConnections();
      searx.closeAllConnections();
      await Promise.all([close(provider), close(searx)]);
    },
  };
}
