// The span of one call to an LLM provider, by the OpenTelemetry GenAI semantic conventions:
// "chat <model>" (kind CLIENT), gen_ai.operation.name, gen_ai.provider.name, gen_ai.request.model,
// gen_ai.response.model and token usage from the provider's answer, and for streams the time to
// the first event. A stream's span ends with the stream, not with the response headers. The HTTP
// client span of each attempt (undici instrumentation) sits below it and carries the traceparent.
import { type Span, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { tracerOf } from "../tracer.ts";

export function startProviderSpan(model: string, host: string): Span {
  return tracerOf().startSpan(`chat ${model}`, {
    kind: SpanKind.CLIENT,
    attributes: {
      "gen_ai.operation.name": "chat",
      // Every provider speaks the OpenAI wire protocol.
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": model,
      "server.address": host,
    },
  });
}

/** Response model and token usage of an OpenAI chat.completion (or of a stream's usage chunk). */
function recordAnswer(span: Span, json: Record<string, unknown>): void {
  if (typeof json.model === "string") span.setAttribute("gen_ai.response.model", json.model);
  const usage = json.usage as { prompt_tokens?: unknown; completion_tokens?: unknown } | null | undefined;
  if (typeof usage?.prompt_tokens === "number") span.setAttribute("gen_ai.usage.input_tokens", usage.prompt_tokens);
  if (typeof usage?.completion_tokens === "number")
    span.setAttribute("gen_ai.usage.output_tokens", usage.completion_tokens);
}

export function endProviderSpan(span: Span, json: Record<string, unknown> | undefined): void {
  if (json) recordAnswer(span, json);
  span.end();
}

export function failProviderSpan(span: Span, err: Error): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
  span.end();
}

/** Passes a stream's events through, noting the first one and the usage chunk; ends the span. */
export async function* tracedStream(span: Span, events: AsyncGenerator<string>): AsyncGenerator<string> {
  const started = performance.now();
  let first = true;
  try {
    for await (const data of events) {
      if (first) {
        first = false;
        span.setAttribute("gen_ai.server.time_to_first_token", (performance.now() - started) / 1000);
        span.addEvent("gen_ai.first_token");
      }
      if (data.includes('"usage"')) {
        try {
          recordAnswer(span, JSON.parse(data) as Record<string, unknown>);
        } catch {
          // Not JSON: the agent reports the broken event; nothing to note here.
        }
      }
      yield data;
    }
    span.end();
  } catch (err) {
    failProviderSpan(span, err as Error);
    throw err;
  } finally {
    // An early stop by the consumer (client gone) ends the span too; end() twice is a no-op.
    span.end();
  }
}
