// A second embedding model for tests of a model change: an in-test HTTP server speaking the
// OpenAI embeddings wire protocol (the third party that cannot run here), backed by the real
// local model: B(v) = [v, 0.5, 0 ...] / |.| in 512 dimensions, so it ranks like MiniLM but has
// its own collection (another size) and its own scores: cosB = (cosA + 0.25) / 1.25. It records
// every input it embedded; `refusing` fails chosen inputs, and `hold` keeps them waiting (a build
// or a copy caught half-way) until released.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { OpenAIEmbedder } from "../../services/search/src/index.ts";
import { localEmbedder } from "./helpers.ts";

export const B_DIMS = 512;

export interface SecondModel {
  /** The provider's base URL (…/v1), for a KnowledgeBase's spec.embedding.baseURL. */
  baseURL: string;
  /** The model's name in search: openai:<model>. */
  name: string;
  /** spec.embedding of a KnowledgeBase using it. */
  spec: { provider: "openai"; model: string; baseURL: string; dimensions: number };
  /** The search service's embedder of it. */
  embedder: OpenAIEmbedder;
  /** Every input embedded so far. */
  inputs: string[];
  /** While set, requests with an input it matches are refused (503, overloaded) and counted. */
  refusing: ((input: string) => boolean) | undefined;
  refused: number;
  /**
   * Requests with an input matching `match` wait until the returned release is called (which
   * also ends the hold); `held` resolves once such a request has arrived.
   */
  hold(match: (input: string) => boolean): { held: Promise<void>; release: () => void };
  close(): Promise<void>;
}

export async function startSecondModel(model: string): Promise<SecondModel> {
  const inputs: string[] = [];
  const holds = new Set<{ match: (input: string) => boolean; arrived: () => void; released: Promise<void> }>();
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const body: Buffer[] = [];
    for await (const c of req) body.push(c as Buffer);
    const send = (status: number, data: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(data));
    };
    if (req.url !== "/v1/embeddings" || req.method !== "POST") return send(404, { error: { message: "not found" } });
    const { input } = JSON.parse(Buffer.concat(body).toString("utf8")) as { input: string[] };
    const refusing = self.refusing;
    if (refusing && input.some(refusing)) {
      self.refused++;
      return send(503, { error: { message: "overloaded", type: "server_error" } });
    }
    for (const h of holds) {
      if (!input.some(h.match)) continue;
      h.arrived();
      await h.released;
    }
    inputs.push(...input);
    const norm = Math.sqrt(1.25);
    const vectors = await (await localEmbedder()).embed(input);
    send(200, {
      object: "list",
      model,
      data: vectors.map((v, index) => {
        const b = new Array<number>(B_DIMS).fill(0);
        v.forEach((x, i) => {
          b[i] = x / norm;
        });
        b[v.length] = 0.5 / norm;
        return { object: "embedding", index, embedding: b };
      }),
      usage: { prompt_tokens: 0, total_tokens: 0 },
    });
  };
  const server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  const self: SecondModel = {
    baseURL,
    name: `openai:${model}`,
    spec: { provider: "openai", model, baseURL, dimensions: B_DIMS },
    embedder: new OpenAIEmbedder({ baseURL, model, dimensions: B_DIMS, maxRetries: 1, timeoutMs: 60_000 }),
    inputs,
    refusing: undefined,
    refused: 0,
    hold(match) {
      let arrived = () => {};
      let release = () => {};
      const held = new Promise<void>((r) => {
        arrived = r;
      });
      const released = new Promise<void>((r) => {
        release = r;
      });
      const h = { match, arrived, released };
      holds.add(h);
      return {
        held,
        release: () => {
          holds.delete(h);
          release();
        },
      };
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
  return self;
}
