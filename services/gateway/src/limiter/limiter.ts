// The gateway's QPM limiter: the shared exact sliding-window limiter (@capstan/shared/limiter,
// the same one search uses per key) with the gateway's metrics (gateway_limiter_*) and its 503
// (limiter_unavailable) under the "deny" Redis-down policy.
import type { Logger } from "@capstan/shared";
import { type RedisDownPolicy, type RedisLimiter, WindowLimiter } from "@capstan/shared/limiter";
import { GatewayError } from "../errors.ts";
import type { GatewayMetrics } from "../metrics.ts";

export type { RedisDownPolicy };

export interface QpmLimiterOptions {
  redis: RedisLimiter | undefined;
  windowMs: number;
  policy: RedisDownPolicy;
  timeoutMs: number;
  metrics: GatewayMetrics;
  logger: Logger;
}

export class QpmLimiter extends WindowLimiter {
  constructor(opts: QpmLimiterOptions) {
    super({ ...opts, unavailable: () => new GatewayError("limiter_unavailable"), what: "QPM limits" });
  }
}
