// The gateway's graceful stop, fitted into the pod's terminationGracePeriodSeconds (T):
//   0 s             SIGTERM: /readyz answers 503 "shutting down"; requests are still served, since
//                   endpoints and ingresses take a few seconds to stop sending new ones here
//                   (idle keep-alive connections are kept; each answer closes its own);
//   unreadyDelay    the listener closes (new connections go to the other replicas; idle
//                   keep-alive connections are closed); open requests and streams go on;
//   T - reserve     the drain window ends: a stream still open gets an OpenAI error event
//                   (server_shutting_down) and ends without [DONE], so SDKs raise instead of
//                   returning a truncated answer; a request still waiting gets a 503;
//   then            history is written (the buffer too, if Redis answers), Redis is closed, exit 0,
//                   before the kubelet's SIGKILL at T.
import type { Logger } from "@capstan/shared";
import type { FastifyInstance } from "fastify";

export interface DrainTimes {
  unreadyDelayMs: number;
  /** From SIGTERM to the cut of whatever is still open. */
  drainMs: number;
}

/** The drain window of a grace period: T minus the reserve, and the hard exit a second before T. */
export function drainTimes(shutdown: {
  terminationGraceSeconds: number;
  unreadyDelayMs: number;
  reserveMs: number;
}): DrainTimes & { exitAfterMs: number } {
  const graceMs = shutdown.terminationGraceSeconds * 1000;
  return {
    unreadyDelayMs: shutdown.unreadyDelayMs,
    drainMs: graceMs - shutdown.reserveMs,
    exitAfterMs: graceMs - 1000,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function drainAndClose(app: FastifyInstance, times: DrainTimes, logger: Logger): Promise<void> {
  const drain = app.gatewayDrain;
  const started = Date.now();
  drain.begin(started);
  logger.info(times, "shutting down: readiness fails now; open requests may run until the drain window ends");
  const cutTimer = setTimeout(() => {
    if (drain.inFlight > 0) {
      logger.warn({ open: drain.inFlight }, "drain window over: ending open requests with an error event");
    }
    drain.cut();
  }, times.drainMs);
  // Idle keep-alive connections stay open while the ingress may still send here: closing one
  // as the proxy reuses it loses that request (a 502 from the proxy, which resends no POST).
  // Answers in this window carry Connection: close, so the proxy drops each after its answer.
  // Once the listener closes, connections that become idle would hold the close until their
  // keep-alive timeout: they are closed as they become idle from then on.
  let idleTimer: NodeJS.Timeout | undefined;
  try {
    await sleep(Math.min(times.unreadyDelayMs, times.drainMs));
    idleTimer = setInterval(() => app.server.closeIdleConnections(), 250);
    await app.close();
  } finally {
    clearTimeout(cutTimer);
    if (idleTimer) clearInterval(idleTimer);
  }
  logger.info({ ms: Date.now() - started }, "gateway stopped");
}
