// The benchmark's own client of the API server: plain undici over one pooled agent with the admin
// client certificate of the test ground, so the driver that creates the objects is the same code
// in both arms of the A/B and uses neither Kubernetes layer under test.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Agent, fetch } from "undici";

export class DriverError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export class Driver {
  private readonly server: string;
  private readonly agent: Agent;

  /** `dir` holds the test ground's ca.crt, admin.crt and admin.key. */
  constructor(server: string, dir: string) {
    this.server = server;
    this.agent = new Agent({
      connect: {
        ca: readFileSync(join(dir, "ca.crt")),
        cert: readFileSync(join(dir, "admin.crt")),
        key: readFileSync(join(dir, "admin.key")),
      },
      keepAliveTimeout: 30_000,
      connections: 64,
    });
  }

  async json<T = unknown>(
    path: string,
    req: { method?: string; body?: unknown; contentType?: string; timeoutMs?: number } = {},
  ): Promise<T> {
    const res = await fetch(this.server + path, {
      method: req.method ?? "GET",
      headers: {
        accept: "application/json",
        ...(req.body !== undefined ? { "content-type": req.contentType ?? "application/json" } : {}),
      },
      ...(req.body !== undefined ? { body: JSON.stringify(req.body) } : {}),
      dispatcher: this.agent,
      signal: AbortSignal.timeout(req.timeoutMs ?? 60_000),
    });
    const text = await res.text();
    if (res.status >= 400)
      throw new DriverError(res.status, `${req.method ?? "GET"} ${path}: ${res.status} ${text.slice(0, 200)}`);
    return (text ? JSON.parse(text) : {}) as T;
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
