// The span of one chat completion, named and attributed by the OpenTelemetry GenAI semantic
// conventions: "chat <model>", gen_ai.operation.name, gen_ai.request.model (the Agent the client
// asked for), token usage, and the time to the first token as an attribute and an event. The
// provider call below it (agents/upstream.ts) carries the same conventions for the provider's model.
import { type Context, type Span, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { Usage } from "../agents/types.ts";
import { tracerOf } from "../tracer.ts";

export function startChatSpan(agent: string, mode: string, parent: Context): Span {
  return tracerOf().startSpan(
    `chat ${agent}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": agent,
        "capstan.agent": agent,
        "capstan.agent.mode": mode,
      },
    },
    parent,
  );
}

/** The first token reached the client: seconds since the request started. */
export function markFirstToken(span: Span, seconds: number): void {
  span.setAttribute("gen_ai.server.time_to_first_token", seconds);
  span.addEvent("gen_ai.first_token");
}

/** Token usage (when the agent reported it), the error if any, then the end. */
export function endChatSpan(span: Span, usage: Usage | null | undefined, error?: Error): void {
  if (usage) {
    span.setAttribute("gen_ai.usage.input_tokens", usage.prompt_tokens);
    span.setAttribute("gen_ai.usage.output_tokens", usage.completion_tokens);
  }
  if (error) span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
  span.end();
}
