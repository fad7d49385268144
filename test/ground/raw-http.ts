// One HTTP request with its path sent exactly as written (fetch and URL normalise dot segments and
// some escapes before sending): what the listener tests use to try each spelling of a path.
import { request } from "node:http";

export interface RawReply {
  status: number;
  body: string;
}

export function rawRequest(
  base: string,
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawReply> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname.replace(/^\[|\]$/g, ""),
        port: url.port,
        method: opts.method ?? "GET",
        path,
        headers: {
          ...(opts.body !== undefined ? { "content-type": "application/json" } : {}),
          ...opts.headers,
        },
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`${opts.method ?? "GET"} ${path}: no answer in 30 s`)));
    req.on("error", reject);
    req.end(opts.body);
  });
}
