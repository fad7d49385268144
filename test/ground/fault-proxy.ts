// A TCP fault proxy on a free loopback port, in front of a real server: passes bytes through,
// or injects the network faults a client must survive — connections reset on arrival
// ("refuse"), accepted and never answered ("blackhole"), or cut mid-flight (dropAll()).
import { createServer, type Server, Socket } from "node:net";

export type FaultMode = "pass" | "refuse" | "blackhole";

export interface FaultProxy {
  port: number;
  /** http://127.0.0.1:<port> (or https://) */
  url(scheme?: "http" | "https"): string;
  mode: FaultMode;
  /** Cuts every open connection (both sides), as a crashed peer or a broken link would. */
  dropAll(): void;
  close(): Promise<void>;
}

export async function startFaultProxy(targetPort: number, targetHost = "127.0.0.1"): Promise<FaultProxy> {
  const open = new Set<Socket>();
  const track = (s: Socket) => {
    open.add(s);
    s.on("close", () => open.delete(s));
    s.on("error", () => s.destroy());
  };
  const proxy: FaultProxy = {
    port: 0,
    url: (scheme = "http") => `${scheme}://127.0.0.1:${proxy.port}`,
    mode: "pass",
    dropAll: () => {
      for (const s of open) s.destroy();
    },
    close: async () => {
      proxy.dropAll();
      await new Promise((r) => server.close(r));
    },
  };
  const server: Server = createServer((client) => {
    track(client);
    if (proxy.mode === "refuse") {
      client.resetAndDestroy();
      return;
    }
    if (proxy.mode === "blackhole") return; // held open, never forwarded, until dropAll/close
    const upstream = new Socket();
    track(upstream);
    upstream.connect(targetPort, targetHost);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const addr = server.address();
  proxy.port = typeof addr === "object" && addr ? addr.port : 0;
  return proxy;
}
