// The span of one call to an LLM provider, by the OpenTelemetry GenAI semantic conventions (the
// inference span): "chat {gen_ai.request.model}", kind CLIENT, with gen_ai.operation.name,
// gen_ai.provider.name, server.address/port and the request's parameters (gen_ai.request.*) when
// it starts; the answer's gen_ai.response.id, .model, .finish_reasons and token usage when it
// ends, and for streams gen_ai.response.time_to_first_chunk; error.type when it fails. It covers
// the whole call, retries included (the HTTP client span of each attempt, from the undici
// instrumentation, sits below it and carries the traceparent); a stream's span ends with the stream.
//
// Made only inside a recorded trace: for an unsampled request (or with no exporter) nothing here
// runs beyond one check, so no span object and no attribute is built for the other 99 %.
import { type Attributes, type Span, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { recordingNow, tracerOf } from "../tracer.ts";

/** Every provider speaks the OpenAI wire protocol: the flavour of telemetry it gets. */
export const PROVIDER_NAME = "openai";

/** gen_ai.request.* from an OpenAI chat request body (only the fields it carries). */
export function requestAttributes(body: Record<string, unknown>): Attributes {
  const a: Attributes = {};
  const num = (key: string, field: string) => {
    const v = body[field];
    if (typeof v === "number") a[key] = v;
  };
  num("gen_ai.request.max_tokens", body.max_completion_tokens !== undefined ? "max_completion_tokens" : "max_tokens");
  num("gen_ai.request.temperature", "temperature");
  num("gen_ai.request.top_p", "top_p");
  num("gen_ai.request.frequency_penalty", "frequency_penalty");
  num("gen_ai.request.presence_penalty", "presence_penalty");
  num("gen_ai.request.seed", "seed");
  if (typeof body.n === "number" && body.n !== 1) a["gen_ai.request.choice.count"] = body.n;
  const stop = body.stop;
  if (typeof stop === "string") a["gen_ai.request.stop_sequences"] = [stop];
  else if (Array.isArray(stop)) a["gen_ai.request.stop_sequences"] = stop.filter((s) => typeof s === "string");
  a["gen_ai.request.stream"] = body.stream === true;
  return a;
}

export interface ProviderTarget {
  model: string;
  /** gen_ai.provider.name (openai, azure.ai.openai, anthropic); default openai. */
  providerName?: string;
  hostname: string;
  port: number;
}

/** The provider call's span, or undefined outside a recorded trace. */
export function startProviderSpan(target: ProviderTarget, body: Record<string, unknown>): Span | undefined {
  if (!recordingNow()) return undefined;
  return tracerOf().startSpan(`chat ${target.model}`, {
    kind: SpanKind.CLIENT,
    attributes: {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": target.providerName ?? PROVIDER_NAME,
      "gen_ai.request.model": target.model,
      "server.address": target.hostname,
      "server.port": target.port,
      ...requestAttributes(body),
    },
  });
}

/** The finish reason of each choice, in choice order (chat.completion or a chunk's choices). */
function finishReasons(choices: unknown): string[] {
  if (!Array.isArray(choices)) return [];
  return choices
    .map((c) => (c as { finish_reason?: unknown }).finish_reason)
    .filter((r): r is string => typeof r === "string");
}

/** Response id, model and token usage of an OpenAI chat.completion (or of a stream's chunk). */
function recordAnswer(span: Span, json: Record<string, unknown>): void {
  if (typeof json.id === "string") span.setAttribute("gen_ai.response.id", json.id);
  if (typeof json.model === "string") span.setAttribute("gen_ai.response.model", json.model);
  const usage = json.usage as { prompt_tokens?: unknown; completion_tokens?: unknown } | null | undefined;
  if (typeof usage?.prompt_tokens === "number") span.setAttribute("gen_ai.usage.input_tokens", usage.prompt_tokens);
  if (typeof usage?.completion_tokens === "number")
    span.setAttribute("gen_ai.usage.output_tokens", usage.completion_tokens);
}

export function endProviderSpan(span: Span, json: Record<string, unknown> | undefined, attempts: number): void {
  span.setAttribute("capstan.upstream.attempts", attempts);
  if (json) {
    recordAnswer(span, json);
    span.setAttribute("gen_ai.response.finish_reasons", finishReasons(json.choices));
  }
  span.end();
}

/** The call failed: status ERROR and error.type (the gateway's error code, a bounded set). */
export function failProviderSpan(span: Span, err: Error & { code?: unknown }, errorType: string): void {
  span.setAttribute("error.type", errorType);
  span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
  span.end();
}

/**
 * Passes a stream's events through, noting the time to its first event, the response's id and
 * model, each choice's finish reason and the usage chunk; ends the span with the stream. Only a
 * sampled request's stream goes through here.
 */
export async function* tracedStream(
  span: Span,
  events: AsyncGenerator<string>,
  started: number,
  errorTypeOf: (err: unknown) => string,
): AsyncGenerator<string> {
  let first = true;
  const reasons: string[] = [];
  try {
    for await (const data of events) {
      // The first chunk names the response (id, model); later ones only matter for a finish
      // reason or the usage.
      const read = first || data.includes('"usage":{') || data.includes('"finish_reason":"');
      if (first) {
        first = false;
        span.setAttribute("gen_ai.response.time_to_first_chunk", (performance.now() - started) / 1000);
      }
      if (read) {
        try {
          const chunk = JSON.parse(data) as Record<string, unknown>;
          recordAnswer(span, chunk);
          reasons.push(...finishReasons(chunk.choices));
        } catch {
          // Not JSON: the agent reports the broken event; nothing to note here.
        }
      }
      yield data;
    }
    span.setAttribute("gen_ai.response.finish_reasons", reasons);
  } catch (err) {
    failProviderSpan(span, err as Error, errorTypeOf(err));
    throw err;
  } finally {
    // An early stop by the consumer (client gone) ends the span too; end() twice is a no-op.
    span.end();
  }
}
