// A stand-in Qdrant for this machine, which cannot run the real server: a loopback HTTP server
// speaking the subset of Qdrant's REST API the adapter uses (collections, payload indexes,
// points upsert/retrieve/delete/count, query/batch with filters and score_threshold), with
// Qdrant's semantics (cosine vectors normalised on write, {result, status, time} envelopes,
// 404 for unknown collections). The same contract suite runs against a real Qdrant when
// QDRANT_URL is set.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

type Payload = Record<string, unknown>;
interface Point {
  id: string | number;
  vector: number[];
  payload: Payload;
}
interface Collection {
  size: number;
  distance: "Cosine" | "Dot";
  points: Map<string, Point>;
  indexes: Map<string, unknown>;
}
type Condition = { key?: string; match?: { value?: unknown; any?: unknown[] }; has_id?: (string | number)[] };
interface Filter {
  must?: Condition[];
  must_not?: Condition[];
}

function matches(p: Point, c: Condition): boolean {
  if (c.has_id) return c.has_id.map(String).includes(String(p.id));
  const v = p.payload[c.key ?? ""];
  if (c.match && "value" in c.match) return v === c.match.value;
  if (c.match?.any) return c.match.any.includes(v);
  throw new Error(`unsupported condition ${JSON.stringify(c)}`);
}

function passes(p: Point, f: Filter | undefined): boolean {
  if (!f) return true;
  return (f.must ?? []).every((c) => matches(p, c)) && !(f.must_not ?? []).some((c) => matches(p, c));
}

export interface FakeQdrant {
  url: string;
  requests: { method: string; path: string }[];
  close(): Promise<void>;
}

export async function startFakeQdrant(): Promise<FakeQdrant> {
  const collections = new Map<string, Collection>();
  const requests: { method: string; path: string }[] = [];

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const body = (raw ? JSON.parse(raw) : {}) as Record<string, unknown>;
    const url = new URL(req.url ?? "/", "http://x");
    const method = req.method ?? "GET";
    requests.push({ method, path: url.pathname });
    const started = performance.now();
    const send = (status: number, result: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      const time = (performance.now() - started) / 1000;
      res.end(JSON.stringify(status < 300 ? { result, status: "ok", time } : { status: { error: result }, time }));
    };
    const parts = url.pathname.split("/").filter(Boolean);
    if (parts[0] !== "collections") return send(404, "Not found");
    if (parts.length === 1 && method === "GET") {
      return send(200, { collections: [...collections.keys()].map((name) => ({ name })) });
    }
    const name = decodeURIComponent(parts[1] ?? "");
    const rest = parts.slice(2).join("/");
    const col = collections.get(name);
    if (rest === "exists" && method === "GET") return send(200, { exists: col !== undefined });
    if (rest === "" && method === "PUT") {
      if (col) return send(409, `Wrong input: Collection \`${name}\` already exists!`);
      const vectors = body.vectors as { size: number; distance: "Cosine" | "Dot" };
      collections.set(name, { size: vectors.size, distance: vectors.distance, points: new Map(), indexes: new Map() });
      return send(200, true);
    }
    if (rest === "" && method === "DELETE") return send(200, collections.delete(name));
    if (!col) return send(404, `Not found: Collection \`${name}\` doesn't exist!`);
    const done = { operation_id: requests.length, status: "completed" };
    switch (`${method} ${rest}`) {
      case "PUT index":
        col.indexes.set(body.field_name as string, body.field_schema);
        return send(200, done);
      case "PUT points": {
        for (const p of body.points as Point[]) {
          if (p.vector.length !== col.size) {
            return send(400, `Wrong input: Vector dimension error: expected dim: ${col.size}, got ${p.vector.length}`);
          }
          const norm = col.distance === "Cosine" ? Math.hypot(...p.vector) || 1 : 1;
          col.points.set(String(p.id), { id: p.id, vector: p.vector.map((x) => x / norm), payload: p.payload ?? {} });
        }
        return send(200, done);
      }
      case "POST points": {
        const ids = (body.ids as (string | number)[]).map(String);
        return send(
          200,
          ids.flatMap((id) => {
            const p = col.points.get(id);
            return p ? [{ id: p.id, payload: p.payload }] : [];
          }),
        );
      }
      case "POST points/delete": {
        if (Array.isArray(body.points)) for (const id of body.points as string[]) col.points.delete(String(id));
        else for (const [id, p] of col.points) if (passes(p, body.filter as Filter)) col.points.delete(id);
        return send(200, done);
      }
      case "POST points/count":
        return send(200, { count: [...col.points.values()].filter((p) => passes(p, body.filter as Filter)).length });
      case "POST points/query/batch": {
        const out = (body.searches as Record<string, unknown>[]).map((s) => {
          const q = s.query as number[];
          if (q.length !== col.size) throw new Error("query dimension error");
          const norm = col.distance === "Cosine" ? Math.hypot(...q) || 1 : 1;
          const threshold = s.score_threshold as number | undefined;
          const points = [...col.points.values()]
            .filter((p) => passes(p, s.filter as Filter))
            .map((p) => ({
              id: p.id,
              version: 0,
              score: p.vector.reduce((a, x, i) => a + (x * (q[i] as number)) / norm, 0),
              payload: s.with_payload ? p.payload : null,
            }))
            .filter((p) => threshold === undefined || p.score >= threshold)
            .sort((a, b) => b.score - a.score)
            .slice(0, (s.limit as number) ?? 10);
          return { points };
        });
        return send(200, out);
      }
      default:
        return send(404, `no route ${method} ${url.pathname}`);
    }
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ status: { error: String(err) } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
