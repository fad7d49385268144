// A request body over the limit is answered 413 before it is read. Fastify then asks for the
// connection to be closed, and the socket is destroyed while the client is still sending: the
// kernel answers the unread data with a reset, and a proxy in front (Traefik, Go's reverse proxy,
// nginx) loses the answer with the connection and turns the 413 into a 502. Seen through the e2e
// node's ingress with a 5 MiB chat (test/e2e/hostile-network.test.ts). As nginx's lingering close
// does, the connection stays open instead: Node reads and discards the rest of the body after the
// answer, and a client still sending LINGER_MS later is cut off, so a huge body costs at most that.
import type { FastifyReply, FastifyRequest } from "fastify";

/** How long the rest of a refused body is read and discarded (nginx's lingering_time is 30 s). */
export const LINGER_MS = 30_000;

/** Call where a service answers a body over its limit, before sending the answer. */
export function lingerOnRefusedBody(request: FastifyRequest, reply: FastifyReply): void {
  if (request.raw.complete) return;
  if (reply.getHeader("connection") === "close") reply.removeHeader("connection");
  const socket = request.raw.socket;
  const timer = setTimeout(() => {
    if (!request.raw.complete) socket.destroy();
  }, LINGER_MS);
  timer.unref();
  request.raw.once("end", () => clearTimeout(timer));
  socket.once("close", () => clearTimeout(timer));
  // Read and drop the rest, also when a body parser had started reading and then paused the stream.
  request.raw.resume();
}
