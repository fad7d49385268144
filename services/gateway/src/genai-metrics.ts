// The OpenTelemetry GenAI semantic conventions' metrics, as Prometheus histograms in the gateway's
// registry. They keep the names the conventions give them, spelt as OpenTelemetry's Prometheus
// exporter spells them (dots to underscores, the unit `s` as `_seconds`, `{token}` dropped), so
// GenAI dashboards built for any instrumented client or model server read them as they are; the
// same reasoning as the operator's controller-runtime names (docs/observability.md):
//
// - the gateway as a GenAI client of its LLM providers, per provider call (retries included, to
//   the last byte; a stream to its end): gen_ai_client_operation_duration_seconds and, when the
//   provider reports usage, gen_ai_client_token_usage (input and output);
// - the gateway as a GenAI server to its clients, per chat request: gen_ai_server_request_duration_seconds
//   and, for answers that sent content, gen_ai_server_time_to_first_token_seconds.
//
// Bucket boundaries are the conventions' own. Labels stay bounded: operation (chat), provider
// ("openai" for providers, "capstan" for the gateway itself), token type (input, output),
// error_type (the gateway's error codes, "cancelled", "_OTHER") and the provider's model, of which
// the first MODEL_LABEL_LIMIT distinct names keep their own series and later ones count as
// "other". The server metrics carry no model: the "model" a client names is an Agent, a tenant's
// identifier, which never labels a histogram.
import { BoundedLabel, metricFamilies, type Registry } from "@capstan/shared";
import { PROVIDER_NAME } from "./agents/provider-span.ts";
import type { Usage } from "./agents/types.ts";

/** gen_ai.client.operation.duration and gen_ai.server.request.duration. */
export const GENAI_DURATION_BUCKETS = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/** gen_ai.client.token.usage. */
export const GENAI_TOKEN_BUCKETS = [
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
];
/** gen_ai.server.time_to_first_token. */
export const GENAI_TTFT_BUCKETS = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
];

/** Distinct provider models kept as label values; later ones are "other". */
export const MODEL_LABEL_LIMIT = 20;

/** gen_ai.provider.name of the gateway itself, as the server its clients call. */
export const GATEWAY_PROVIDER_NAME = "capstan";

/** What one provider call records when it ends. */
export interface ClientRecorder {
  /** The call ended after `seconds`: failed with `errorType`, or done with the provider's usage (if it reported one). */
  done(seconds: number, errorType: string | undefined, usage: Usage | undefined): void;
}

export function genaiMetrics(registry: Registry) {
  const m = metricFamilies(registry);
  const clientDuration = m.histogram(
    "gen_ai_client_operation_duration_seconds",
    "GenAI operation duration: one call to an LLM provider, retries included, to its last byte (OpenTelemetry gen_ai.client.operation.duration)",
    ["gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model", "error_type"],
    GENAI_DURATION_BUCKETS,
  );
  const tokenUsage = m.histogram(
    "gen_ai_client_token_usage",
    "Input and output tokens per LLM provider call, as the provider reported them (OpenTelemetry gen_ai.client.token.usage)",
    ["gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_token_type", "gen_ai_request_model"],
    GENAI_TOKEN_BUCKETS,
  );
  const serverDuration = m.histogram(
    "gen_ai_server_request_duration_seconds",
    "Chat request duration at the gateway, received to last byte (OpenTelemetry gen_ai.server.request.duration)",
    ["gen_ai_operation_name", "gen_ai_provider_name", "error_type"],
    GENAI_DURATION_BUCKETS,
  );
  const timeToFirstToken = m.histogram(
    "gen_ai_server_time_to_first_token_seconds",
    "Time from a chat request received to its first content sent (OpenTelemetry gen_ai.server.time_to_first_token)",
    ["gen_ai_operation_name", "gen_ai_provider_name"],
    GENAI_TTFT_BUCKETS,
  );
  const server = { gen_ai_operation_name: "chat", gen_ai_provider_name: GATEWAY_PROVIDER_NAME };
  // The successful series exist at 0 from the start, so a rate reads 0 rather than nothing.
  serverDuration.zero(server);
  timeToFirstToken.zero(server);

  const models = new BoundedLabel(MODEL_LABEL_LIMIT);
  const recorders = new Map<string, ClientRecorder>();
  const recorderFor = (model: string): ClientRecorder => {
    const labels = { gen_ai_operation_name: "chat", gen_ai_provider_name: PROVIDER_NAME, gen_ai_request_model: model };
    const input = { ...labels, gen_ai_token_type: "input" };
    const output = { ...labels, gen_ai_token_type: "output" };
    return {
      done(seconds, errorType, usage) {
        clientDuration.observe(errorType === undefined ? labels : { ...labels, error_type: errorType }, seconds);
        if (typeof usage?.prompt_tokens === "number") tokenUsage.observe(input, usage.prompt_tokens);
        if (typeof usage?.completion_tokens === "number") tokenUsage.observe(output, usage.completion_tokens);
      },
    };
  };

  return {
    /** The recorder of a call to this provider model (one per model label, made once). */
    client(model: string): ClientRecorder {
      const label = models.value(model);
      let r = recorders.get(label);
      if (!r) {
        r = recorderFor(label);
        recorders.set(label, r);
      }
      return r;
    },
    server: {
      /** A chat request ended after `seconds`, failed with `errorType` or not. */
      done(seconds: number, errorType?: string): void {
        serverDuration.observe(errorType === undefined ? server : { ...server, error_type: errorType }, seconds);
      },
      firstToken(seconds: number): void {
        timeToFirstToken.observe(server, seconds);
      },
    },
  };
}

export type GenaiMetrics = ReturnType<typeof genaiMetrics>;
