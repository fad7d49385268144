// The LLM agent (and, with knowledge configured, the RAG agent): the Agent's system prompt, the
// retrieved passages and the client's messages go to the Agent's OpenAI-compatible provider with
// the Agent's parameters as defaults (the request's own fields win), through the router
// (router.ts: the Agent's upstreams in order, with fallback and a breaker each). Streams are passed
// through chunk by chunk; the consumer pulls, so a slow client slows the upstream read (backpressure).
import type { AgentSpec } from "@capstan/shared/api";
import { type ChatMessage, type ChatRequest, PASSTHROUGH_FIELDS } from "../chat-request.ts";
import { GatewayError } from "../errors.ts";
import { retrieveCitations } from "./knowledge.ts";
import { ragContextMessage, referencesText } from "./passages.ts";
import type { Retriever } from "./retrieval.ts";
import type { UpstreamRouter } from "./router.ts";
import { usageOf } from "./tokens.ts";
import type { AgentContext, ChatAgent, Citation, Completion, CompletionChoice, StreamPiece, Usage } from "./types.ts";

export interface LlmAgentDeps {
  router: UpstreamRouter;
  retriever: Retriever;
}

function agentDefaults(spec: AgentSpec): Record<string, unknown> {
  const p = spec.parameters ?? {};
  const out: Record<string, unknown> = {};
  if (p.temperature !== undefined) out.temperature = p.temperature;
  if (p.topP !== undefined) out.top_p = p.topP;
  if (p.maxTokens !== undefined) out.max_tokens = p.maxTokens;
  if (p.presencePenalty !== undefined) out.presence_penalty = p.presencePenalty;
  if (p.frequencyPenalty !== undefined) out.frequency_penalty = p.frequencyPenalty;
  if (p.stop !== undefined) out.stop = p.stop;
  return out;
}

/** The upstream request body, without `model` (each upstream sets its own): pure, unit-tested. */
export function upstreamBody(
  spec: AgentSpec,
  request: ChatRequest,
  citations: Citation[] | undefined,
  stream: boolean,
): Record<string, unknown> {
  const messages: Array<ChatMessage | { role: "system"; content: string }> = [];
  if (spec.systemPrompt) messages.push({ role: "system", content: spec.systemPrompt });
  if (citations !== undefined) {
    messages.push({ role: "system", content: ragContextMessage(citations, spec.knowledge?.citations !== "none") });
  }
  messages.push(...request.messages);
  const body: Record<string, unknown> = { messages, ...agentDefaults(spec) };
  for (const field of PASSTHROUGH_FIELDS) {
    const value = request[field];
    if (value !== undefined && value !== null) body[field] = value;
  }
  if (body.max_completion_tokens !== undefined) delete body.max_tokens;
  body.stream = stream;
  // Always ask for usage so tokens are counted; the client only sees it when it asked.
  if (stream) body.stream_options = { include_usage: true };
  return body;
}

function asUsage(raw: unknown): Usage | undefined {
  const u = raw as Partial<Usage> | null | undefined;
  if (!u || typeof u.prompt_tokens !== "number" || typeof u.completion_tokens !== "number") return undefined;
  return { ...u, total_tokens: u.total_tokens ?? u.prompt_tokens + u.completion_tokens } as Usage;
}

export class LlmAgent implements ChatAgent {
  readonly mode: "llm" | "rag";
  private readonly deps: LlmAgentDeps;

  constructor(mode: "llm" | "rag", deps: LlmAgentDeps) {
    this.mode = mode;
    this.deps = deps;
  }

  private async prepare(ctx: AgentContext, stream: boolean) {
    const spec = ctx.agent.spec;
    const citations = this.mode === "rag" ? await retrieveCitations(ctx, this.deps.retriever) : undefined;
    const body = upstreamBody(spec, ctx.request, citations, stream);
    const call = { agent: ctx.agent, namespace: ctx.channel.namespace, body, stream, signal: ctx.signal };
    return { call, citations: citations ?? [], citeMode: spec.knowledge?.citations ?? "none" };
  }

  async complete(ctx: AgentContext): Promise<Completion> {
    const { call, citations, citeMode } = await this.prepare(ctx, false);
    const res = await this.deps.router.call(call);
    ctx.served = { upstream: res.upstream.name, model: res.upstream.target.model };
    const json = res.json ?? {};
    const rawChoices = Array.isArray(json.choices) ? (json.choices as Record<string, unknown>[]) : [];
    if (rawChoices.length === 0) throw new GatewayError("upstream_error", { detail: "the response has no choices" });
    const choices: CompletionChoice[] = rawChoices.map((c, i) => {
      const message: Record<string, unknown> = { ...((c.message as Record<string, unknown>) ?? {}) };
      const content = typeof message.content === "string" ? message.content : null;
      return {
        index: typeof c.index === "number" ? c.index : i,
        message: {
          ...message,
          role: "assistant",
          content: citeMode === "append" && content !== null ? content + referencesText(citations) : content,
        },
        finish_reason: typeof c.finish_reason === "string" ? c.finish_reason : "stop",
        logprobs: c.logprobs ?? null,
      };
    });
    const usage =
      asUsage(json.usage) ??
      (await usageOf(call.body.messages as ChatMessage[], choices.map((c) => c.message.content ?? "").join("")));
    return { choices, usage, ...(citeMode === "field" ? { citations } : {}) };
  }

  async *stream(ctx: AgentContext): AsyncGenerator<StreamPiece> {
    const { call, citations, citeMode } = await this.prepare(ctx, true);
    const res = await this.deps.router.call(call);
    ctx.served = { upstream: res.upstream.name, model: res.upstream.target.model };
    if (citeMode === "field") yield { kind: "citations", citations };
    let usage: Usage | undefined;
    let text = "";
    let finished = false;
    for await (const data of res.events ?? []) {
      let chunk: Record<string, unknown>;
      try {
        chunk = JSON.parse(data) as Record<string, unknown>;
      } catch {
        throw new GatewayError("upstream_error", { detail: "the stream carried an event that is not JSON" });
      }
      if (chunk.error) {
        const e = chunk.error as { message?: unknown };
        throw new GatewayError("upstream_error", {
          detail: typeof e.message === "string" ? e.message : "stream error",
        });
      }
      usage = asUsage(chunk.usage) ?? usage;
      for (const c of Array.isArray(chunk.choices) ? (chunk.choices as Record<string, unknown>[]) : []) {
        const index = typeof c.index === "number" ? c.index : 0;
        const delta = { ...((c.delta as Record<string, unknown>) ?? {}) };
        const finish = typeof c.finish_reason === "string" ? c.finish_reason : null;
        if (typeof delta.content === "string" && index === 0) text += delta.content;
        if (finish && index === 0 && citeMode === "append" && citations.length > 0) {
          if (delta.content || delta.role || delta.tool_calls) {
            yield { kind: "delta", index, delta, finish_reason: null, logprobs: c.logprobs ?? null };
          }
          const refs = referencesText(citations);
          text += refs;
          yield { kind: "delta", index, delta: { content: refs }, finish_reason: finish, logprobs: null };
        } else {
          yield { kind: "delta", index, delta, finish_reason: finish, logprobs: c.logprobs ?? null };
        }
        if (finish) finished = true;
      }
    }
    if (!finished) throw new GatewayError("upstream_error", { detail: "the stream ended before the answer finished" });
    yield { kind: "usage", usage: usage ?? (await usageOf(call.body.messages as ChatMessage[], text)) };
  }
}
