// Where and how one upstream is called, by its kind, without I/O: the URL, the auth headers, the
// body in the provider's shape, and the translation of its answers back to OpenAI's shape.
//   openai     POST {baseURL}/chat/completions, Authorization: Bearer <key>; passed through as is.
//   azure      POST {baseURL}/openai/deployments/{deployment}/chat/completions?api-version=<v>,
//              api-key: <key>; the body is OpenAI's (Azure ignores `model`; the deployment picks it).
//   anthropic  POST {baseURL}/messages, x-api-key: <key>, anthropic-version: <v>; translated both
//              ways (anthropic.ts, anthropic-stream.ts).
import type { AgentUpstream, UpstreamKind } from "@capstan/shared/api";
import { ANTHROPIC_VERSION, fromAnthropicMessage, toAnthropicRequest } from "./anthropic.ts";
import { fromAnthropicStream } from "./anthropic-stream.ts";

export const AZURE_API_VERSION = "2024-10-21";

type Json = Record<string, unknown>;

/** What the HTTP client needs of one upstream, fixed for as long as the Agent does not change. */
export interface UpstreamTarget {
  kind: UpstreamKind;
  /** The full URL of the chat operation. */
  url: string;
  model: string;
  /** gen_ai.provider.name of the GenAI span: openai, azure.ai.openai, anthropic. */
  providerName: string;
  /** Headers besides the key's. */
  headers: Record<string, string>;
  /** The key header: its name and how the value is written. */
  keyHeader(key: string): [string, string];
  /** The provider's body for an OpenAI body whose `model` is already this upstream's. */
  body(openai: Json): Json;
  /** A non-stream answer as a chat.completion; absent: already one. */
  response?: (json: Json) => Json;
  /** A stream's event data as chat.completion.chunk JSON; absent: already so. */
  stream?: (events: AsyncIterable<string>, created: number) => AsyncGenerator<string>;
}

const base = (url: string) => url.replace(/\/+$/, "");

export function upstreamTarget(up: AgentUpstream): UpstreamTarget {
  switch (up.kind) {
    case "azure": {
      const deployment = encodeURIComponent(up.deployment ?? up.model);
      const version = encodeURIComponent(up.apiVersion ?? AZURE_API_VERSION);
      return {
        kind: "azure",
        url: `${base(up.baseURL)}/openai/deployments/${deployment}/chat/completions?api-version=${version}`,
        model: up.model,
        providerName: "azure.ai.openai",
        headers: {},
        keyHeader: (key) => ["api-key", key],
        body: (openai) => openai,
      };
    }
    case "anthropic":
      return {
        kind: "anthropic",
        url: `${base(up.baseURL)}/messages`,
        model: up.model,
        providerName: "anthropic",
        headers: { "anthropic-version": up.apiVersion ?? ANTHROPIC_VERSION },
        keyHeader: (key) => ["x-api-key", key],
        body: toAnthropicRequest,
        response: fromAnthropicMessage,
        stream: fromAnthropicStream,
      };
    default:
      return {
        kind: "openai",
        url: `${base(up.baseURL)}/chat/completions`,
        model: up.model,
        providerName: "openai",
        headers: {},
        keyHeader: (key) => ["authorization", `Bearer ${key}`],
        body: (openai) => openai,
      };
  }
}
