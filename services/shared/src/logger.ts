// pino JSON logs with the active trace id on every line and secrets redacted by path.
import { context, trace } from "@opentelemetry/api";
import { type Logger, type LoggerOptions, pino } from "pino";

export type { Logger } from "pino";

/** Paths never written: keys, tokens, authorization headers, wherever they appear. */
export const REDACT_PATHS = [
  "authorization",
  "*.authorization",
  "headers.authorization",
  "req.headers.authorization",
  'req.headers["x-api-key"]',
  "apiKey",
  "*.apiKey",
  "key",
  "*.key",
  "token",
  "*.token",
  "password",
  "*.password",
];

export interface LoggerConfig {
  name: string;
  level?: string;
  /** Where lines go; default stdout. Tests pass a stream to read them. */
  destination?: pino.DestinationStream;
}

export function createLogger(cfg: LoggerConfig): Logger {
  const options: LoggerOptions = {
    name: cfg.name,
    level: cfg.level ?? process.env.LOG_LEVEL ?? "info",
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    base: { service: cfg.name },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    mixin() {
      const span = trace.getSpan(context.active());
      if (!span) return {};
      const { traceId, spanId } = span.spanContext();
      return { trace_id: traceId, span_id: spanId };
    },
  };
  return cfg.destination ? pino(options, cfg.destination) : pino(options);
}
