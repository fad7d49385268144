// A real redis-server (Debian package) on a free loopback port, with no persistence.
import { Socket } from "node:net";
import { freePort } from "./ports.ts";
import { startProcess, waitFor } from "./process.ts";

export interface RedisServer {
  url: string;
  port: number;
  stop(): Promise<void>;
  /** SIGSTOP: the process keeps its connections but answers nothing (a hung node, a partition). */
  freeze(): void;
  /** SIGCONT: it answers again, including what was sent while it was frozen. */
  thaw(): void;
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.setTimeout(1000);
    socket.once("data", (data) => {
      socket.destroy();
      resolve(data.toString().startsWith("+PONG"));
    });
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
    socket.connect(port, "127.0.0.1", () => socket.write("PING\r\n"));
  });
}

/** A data node on loopback with no persistence (RDB and AOF off). */
export function redisServerArgs(port: number): string[] {
  return ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "yes"];
}

export async function startRedis(opts: { port?: number } = {}): Promise<RedisServer> {
  const port = opts.port ?? (await freePort());
  const proc = startProcess("redis-server", process.env.REDIS_SERVER_BIN ?? "redis-server", redisServerArgs(port));
  await waitFor("redis PING", () => ping(port), { timeoutMs: 15_000, proc });
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: async () => {
      proc.child.kill("SIGCONT"); // a frozen process would ignore SIGTERM until killed
      await proc.stop();
    },
    freeze: () => proc.child.kill("SIGSTOP"),
    thaw: () => proc.child.kill("SIGCONT"),
  };
}
