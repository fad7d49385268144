// One CLIENT span per Redis command sent inside a recorded trace (trace-sdk.ts registers it when a
// process exports traces; the name `ioredis` in OTEL_NODE_DISABLED_INSTRUMENTATIONS /
// OTEL_NODE_ENABLED_INSTRUMENTATIONS leaves it out).
//
// Why not @opentelemetry/instrumentation-ioredis: for a traced command it replaces the command
// object's own resolve and reject functions with wrappers. Commands are ioredis's hottest objects,
// and 1 traced request in 100 giving some of them fields of another kind is enough to make V8
// throw away and rebuild the optimised code that handles all of them; with it, a 1 % sampler cost
// the gateway 2 % more of its throughput than without it (bench/gateway/RESULTS.md). Here the span
// ends on the command's own promise, and a command sent outside a recorded trace costs one check.
//
// The span follows the database client conventions as the instrumentation's did: named after the
// command (`evalsha`), with db.system.name `redis`, db.operation.name (prefixed `MULTI ` or
// `PIPELINE ` inside one), db.query.text from OpenTelemetry's Redis serializer (the arguments of
// commands known to be safe only, key names of GET/INCR/EVAL..., never values or AUTH passwords),
// server.address and server.port; an error reply sets error.type, the exception and status ERROR.
import { createRequire } from "node:module";
import { context, SpanKind, SpanStatusCode, type Tracer, trace } from "@opentelemetry/api";
import { defaultDbStatementSerializer } from "@opentelemetry/redis-common";

/** What a command and a client look like to sendCommand (ioredis's Command and Redis). */
interface Command {
  name: string;
  args: (string | Buffer | number)[];
  promise: Promise<unknown>;
  inTransaction?: boolean;
  pipelineIndex?: number;
}
interface Client {
  options: { host?: string; port?: number };
}
type SendCommand = (this: Client, command: Command, stream?: unknown) => unknown;

/** Patches ioredis's Redis.prototype.sendCommand (every client, cluster nodes included); returns the undo. */
export function traceRedisCommands(tracer: () => Tracer): () => void {
  const { Redis } = createRequire(import.meta.url)("ioredis") as { Redis: { prototype: { sendCommand: SendCommand } } };
  const original = Redis.prototype.sendCommand;
  const traced: SendCommand & { __wrapped?: boolean } = function (this: Client, command, stream) {
    const parent = context.active();
    if (trace.getSpan(parent)?.isRecording() !== true || typeof command !== "object") {
      return original.call(this, command, stream);
    }
    const name = command.name;
    const operation =
      name === "multi" || name === "exec"
        ? name
        : command.inTransaction
          ? `MULTI ${name}`
          : command.pipelineIndex != null
            ? `PIPELINE ${name}`
            : name;
    const span = tracer().startSpan(
      name,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          "db.system.name": "redis",
          "db.operation.name": operation,
          "db.query.text": defaultDbStatementSerializer(name, command.args),
          "server.address": this.options.host,
          "server.port": this.options.port,
        },
      },
      parent,
    );
    command.promise.then(
      () => span.end(),
      (err: Error) => {
        span.setAttribute("error.type", err.name || "Error");
        span.recordException(err);
        span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
        span.end();
      },
    );
    return original.call(this, command, stream);
  };
  // The same mark OpenTelemetry's instrumentations leave on what they patch.
  traced.__wrapped = true;
  Redis.prototype.sendCommand = traced;
  return () => {
    if (Redis.prototype.sendCommand === traced) Redis.prototype.sendCommand = original;
  };
}
