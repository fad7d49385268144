// The span of one agent step (the Agent bound to the channel answering one chat request), by the
// OpenTelemetry GenAI semantic conventions for an in-process agent: "invoke_agent {gen_ai.agent.name}",
// kind INTERNAL, gen_ai.operation.name=invoke_agent, gen_ai.provider.name (the agent's provider
// protocol, "openai"; "capstan" for the extractive agent, which answers from search itself),
// gen_ai.agent.name/.id, gen_ai.request.model (the provider's model) and the request's
// parameters when it starts; gen_ai.response.id (the completion id the client gets),
// .finish_reasons and token usage when it ends; error.type when it fails. Its children are the
// retrieval (RAG, extractive) and the provider call (agents/provider-span.ts).
//
// Made only inside a recorded trace (an unsampled request builds nothing here). The time to the
// first token is not a span attribute: it is the gen_ai.server.time_to_first_token metric
// (metrics.ts), and a stream's provider span carries gen_ai.response.time_to_first_chunk.

import type { Agent } from "@capstan/shared/api";
import { type Attributes, type Context, type Span, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { PROVIDER_NAME } from "../agents/provider-span.ts";
import type { AgentMode, Usage } from "../agents/types.ts";
import type { ChatRequest } from "../chat-request.ts";
import { recordingNow, tracerOf } from "../tracer.ts";

/** gen_ai.provider.name of an agent: its provider's protocol, or Capstan for the extractive agent. */
export function agentProviderName(mode: AgentMode): string {
  return mode === "extractive" ? "capstan" : PROVIDER_NAME;
}

function requestAttributes(agent: Agent, request: ChatRequest): Attributes {
  const a: Attributes = {};
  const params = agent.spec.parameters;
  const maxTokens = request.max_completion_tokens ?? request.max_tokens ?? params?.maxTokens;
  if (typeof maxTokens === "number") a["gen_ai.request.max_tokens"] = maxTokens;
  const temperature = request.temperature ?? params?.temperature;
  if (typeof temperature === "number") a["gen_ai.request.temperature"] = temperature;
  const topP = request.top_p ?? params?.topP;
  if (typeof topP === "number") a["gen_ai.request.top_p"] = topP;
  a["gen_ai.request.stream"] = request.stream === true;
  return a;
}

/** The agent step's span, or undefined outside a recorded trace. */
export function startAgentSpan(agent: Agent, mode: AgentMode, request: ChatRequest, parent: Context): Span | undefined {
  if (!recordingNow(parent)) return undefined;
  const name = agent.metadata.name;
  const model = agent.spec.provider?.model ?? agent.spec.upstreams?.[0]?.model;
  return tracerOf().startSpan(
    `invoke_agent ${name}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": agentProviderName(mode),
        "gen_ai.agent.name": name,
        "gen_ai.agent.id": `${agent.metadata.namespace}/${name}`,
        ...(agent.spec.description ? { "gen_ai.agent.description": agent.spec.description } : {}),
        ...(model ? { "gen_ai.request.model": model } : {}),
        ...requestAttributes(agent, request),
        "capstan.agent.mode": mode,
      },
    },
    parent,
  );
}

export interface AgentOutcome {
  /** The completion id the client got (chatcmpl-…). */
  id: string;
  finishReasons: string[];
  usage: Usage | null | undefined;
  /** The failure's error code (the gateway's error registry), when the step failed. */
  error?: { type: string; message: string };
}

/** Ends the step's span (callers check it exists first, so no outcome is built for an unsampled request). */
export function endAgentSpan(span: Span, outcome: AgentOutcome): void {
  span.setAttribute("gen_ai.response.id", outcome.id);
  if (outcome.finishReasons.length) span.setAttribute("gen_ai.response.finish_reasons", outcome.finishReasons);
  if (outcome.usage) {
    span.setAttribute("gen_ai.usage.input_tokens", outcome.usage.prompt_tokens);
    span.setAttribute("gen_ai.usage.output_tokens", outcome.usage.completion_tokens);
  }
  if (outcome.error) {
    span.setAttribute("error.type", outcome.error.type);
    span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error.message });
  }
  span.end();
}
