// The gateway's response shapes as zod schemas: Fastify serialises answers through them
// (fastify-type-provider-zod) and @fastify/swagger publishes them in /openapi.json. Objects that
// carry a provider's answer are loose, so fields a newer provider adds pass through unchanged.
import { schemaRegistry, errorResponses as sharedErrorResponses } from "@capstan/shared";
import { z } from "zod";

/** The gateway's named schemas (components.schemas of its document). */
export const gatewaySchemas = schemaRegistry();

/** The OpenAI error object every gateway error is sent as. */
export const openAiError = z.object({
  error: z.object({
    message: z.string(),
    type: z.string(),
    param: z.string().nullable(),
    code: z.string(),
  }),
});
gatewaySchemas.add(openAiError, { id: "OpenAIError", description: "OpenAI error object" });

const usage = z.looseObject({ prompt_tokens: z.int(), completion_tokens: z.int(), total_tokens: z.int() });
gatewaySchemas.add(usage, { id: "Usage" });

const citation = z.object({
  index: z.int(),
  knowledgeId: z.string(),
  docsId: z.string(),
  docsName: z.string(),
  embeddingId: z.string(),
  chunkIndex: z.int().nullable(),
  score: z.number(),
  rerankedScore: z.number().nullable(),
  source: z.string(),
  text: z.string(),
});
gatewaySchemas.add(citation, { id: "Citation", description: "A passage the answer used (RAG and extractive agents)" });

export const chatCompletion = z.looseObject({
  id: z.string().describe("chatcmpl-<id>"),
  object: z.literal("chat.completion"),
  created: z.int().describe("Unix time in seconds"),
  model: z.string(),
  choices: z.array(
    z.looseObject({
      index: z.int(),
      message: z.looseObject({ role: z.literal("assistant"), content: z.string().nullable() }),
      finish_reason: z.string().nullable(),
      logprobs: z.unknown().optional(),
    }),
  ),
  usage,
  system_fingerprint: z.string().nullable().optional(),
  citations: z.array(citation).optional(),
});
gatewaySchemas.add(chatCompletion, { id: "ChatCompletion" });

/**
 * Documentation only (streams are written as they come): one event of a stream: true answer.
 * OpenAPI 3.1 reads the schema of a text/event-stream as the schema of each event, with the
 * event's fields as properties (the shape server-sent event parsers give).
 */
export const chatCompletionStream = z.object({
  data: z
    .string()
    .describe(
      "a chat.completion.chunk as JSON; `[DONE]` ends the stream; an error after the first byte is sent as the OpenAI error object as JSON and the stream ends without [DONE]",
    ),
  event: z.string().optional().describe("never set by the gateway: parsers report `message`"),
  id: z.string().optional(),
  retry: z.int().optional(),
});
gatewaySchemas.add(chatCompletionStream, {
  id: "ChatCompletionStreamEvent",
  description:
    "One server-sent event of a streamed answer: `data: <chat.completion.chunk JSON>` lines separated by blank lines, the last one `data: [DONE]`",
});

export const model = z.object({ id: z.string(), object: z.literal("model"), created: z.int(), owned_by: z.string() });
gatewaySchemas.add(model, { id: "Model" });

export const modelList = z.object({ object: z.literal("list"), data: z.array(model) });
gatewaySchemas.add(modelList, { id: "ModelList" });

/** Route `response` entries for error statuses: the OpenAI error object. */
export function errorResponses<S extends number>(...statuses: S[]) {
  return sharedErrorResponses(openAiError, ...statuses);
}
