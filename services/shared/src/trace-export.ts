// The OTLP/HTTP span exporter, sending over undici instead of node:http (trace-sdk.ts uses it when
// OTEL_TRACES_EXPORTER is otlp, the default, and the protocol is http/protobuf or http/json).
//
// Why not the SDK's own exporter: it posts with node:http's client, whose requests share node's
// OutgoingMessage code (headers, write, end) with every response a service sends. A batch posted
// every few seconds is enough to keep that hot server code from V8's best tier: with a 1 % sampler
// the stock exporter cost the gateway 3-4 % of its throughput on its own, against nothing for the
// same batches posted over undici (bench/gateway/tracing.ts, bench/gateway/RESULTS.md). The
// services already make their outgoing calls with undici, so this adds no code to the hot path.
//
// Everything but the transport is OpenTelemetry's: the configuration from the same OTEL_EXPORTER_OTLP_*
// variables (endpoint, headers, timeout, compression, concurrency), the serializers, the export
// delegate with its bounded queue, and the exporter's self-observability metrics. The transport
// follows the OTLP/HTTP specification as the stock one does: 2xx succeeds; 429, 502, 503, 504 and
// network errors are retried up to 5 times with exponential backoff (1 s, x1.5, at most 5 s, 20 %
// jitter) or the server's Retry-After, within the export's timeout; anything else fails the batch.
// Each attempt is counted (trace-export-stats.ts: capstan_trace_export_requests_total).
import { gzip } from "node:zlib";
import {
  createOtlpNetworkExportDelegate,
  type ExportResponse,
  type IExporterTransport,
  OTLPExporterBase,
} from "@opentelemetry/otlp-exporter-base";
import { convertLegacyHttpOptions, createOtlpHttpExporterMetrics } from "@opentelemetry/otlp-exporter-base/node-http";
import {
  type IExportTraceServiceResponse,
  type ISerializer,
  JsonTraceSerializer,
  ProtobufTraceSerializer,
  TraceExporterMetricsHelper,
} from "@opentelemetry/otlp-transformer";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { Agent, errors, request } from "undici";
import { parseRetryAfter } from "./resilience/retry-after.ts";
import { isRetryableOtlpNetworkCode, isRetryableOtlpStatus } from "./resilience/retryable.ts";
import { countExportAttempt, exportRetries } from "./trace-export-stats.ts";

const MAX_ATTEMPTS = 6;
const INITIAL_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 5000;
const BACKOFF_MULTIPLIER = 1.5;
const JITTER = 0.2;
/** A collector's answer is a few bytes (a partial success at most); more is read as a failure. */
const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

type Protocol = "http/protobuf" | "http/json";

/**
 * The OTLP/HTTP protocol the environment asks traces to be exported with, or undefined when it
 * asks for something this exporter does not do (grpc, zipkin, console, several exporters): the
 * SDK then builds its own from the same variables.
 */
export function otlpHttpProtocol(env: NodeJS.ProcessEnv): Protocol | undefined {
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "").split(",").map((s) => s.trim());
  if (exporters.filter(Boolean).some((name) => name !== "otlp")) return undefined;
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "").trim();
  if (protocol === "" || protocol === "http/protobuf") return "http/protobuf";
  if (protocol === "http/json") return "http/json";
  return undefined;
}

/** OTLP/HTTP trace exporter over undici, configured from the OTEL_EXPORTER_OTLP_* variables. */
export class UndiciOtlpTraceExporter extends OTLPExporterBase<ReadableSpan[]> {
  constructor(protocol: Protocol) {
    const json = protocol === "http/json";
    const config = convertLegacyHttpOptions({}, "TRACES", "v1/traces", {
      "Content-Type": json ? "application/json" : "application/x-protobuf",
    });
    const serializer: ISerializer<ReadableSpan[], IExportTraceServiceResponse> = json
      ? JsonTraceSerializer
      : ProtobufTraceSerializer;
    const metrics = createOtlpHttpExporterMetrics(
      json ? "otlp_http_json_span_exporter" : "otlp_http_span_exporter",
      TraceExporterMetricsHelper,
      config.url,
      undefined, // no self-observability meter: the services' metrics are Prometheus's
    );
    const transport = new UndiciTransport(config.url, config.headers, config.compression === "gzip", config.userAgent);
    super(createOtlpNetworkExportDelegate(config, serializer, metrics, transport));
  }
}

/** Posts serialized batches to one URL, retrying what the specification calls retryable. */
export class UndiciTransport implements IExporterTransport {
  private readonly agent = new Agent({ connections: 2, keepAliveTimeout: 30_000 });
  private readonly url: string;
  private readonly headers: () => Promise<Record<string, string>>;
  private readonly compress: boolean;
  private readonly userAgent: string;

  constructor(url: string, headers: () => Promise<Record<string, string>>, compress: boolean, userAgent?: string) {
    this.url = url;
    this.headers = headers;
    this.compress = compress;
    this.userAgent = userAgent ? `${userAgent} capstan-otlp-exporter` : "capstan-otlp-exporter";
  }

  async send(data: Uint8Array, timeoutMillis: number): Promise<ExportResponse> {
    const deadline = Date.now() + timeoutMillis;
    const body = this.compress ? await gzipped(data) : data;
    let backoff = INITIAL_BACKOFF_MS;
    let result = await this.attempt(body, timeoutMillis);
    for (let attempt = 1; result.status === "retryable" && attempt < MAX_ATTEMPTS; attempt++) {
      const jittered = Math.min(backoff * (1 + (Math.random() * 2 - 1) * JITTER), MAX_BACKOFF_MS);
      backoff *= BACKOFF_MULTIPLIER;
      const wait = result.retryInMillis ?? jittered;
      const left = deadline - Date.now();
      if (wait >= left) return result;
      await new Promise((resolve) => setTimeout(resolve, Math.max(wait, 0)));
      exportRetries.count++;
      result = await this.attempt(body, deadline - Date.now());
    }
    return result;
  }

  private async attempt(body: Uint8Array, timeoutMillis: number): Promise<ExportResponse> {
    const headers: Record<string, string> = { ...(await this.headers()), "user-agent": this.userAgent };
    if (this.compress) headers["content-encoding"] = "gzip";
    try {
      const res = await request(this.url, {
        method: "POST",
        headers,
        body,
        dispatcher: this.agent,
        signal: AbortSignal.timeout(Math.max(timeoutMillis, 1)),
      });
      countExportAttempt(res.statusCode >= 200 && res.statusCode <= 299 ? "ok" : `http_${res.statusCode}`);
      const answer = await readAtMost(res.body, MAX_RESPONSE_BYTES);
      if (answer === undefined) {
        return { status: "failure", error: new Error(`OTLP export answer over ${MAX_RESPONSE_BYTES} bytes`) };
      }
      if (res.statusCode >= 200 && res.statusCode <= 299) return { status: "success", data: answer };
      if (isRetryableOtlpStatus(res.statusCode)) {
        return { status: "retryable", retryInMillis: parseRetryAfter(firstOf(res.headers["retry-after"])) };
      }
      return { status: "failure", error: new Error(`OTLP export answered HTTP ${res.statusCode}`) };
    } catch (err) {
      const code = (err as { code?: string }).code;
      const timedOut = (err as Error).name === "TimeoutError" || err instanceof errors.RequestAbortedError;
      countExportAttempt(timedOut ? "timeout" : "error");
      if (timedOut || isRetryableOtlpNetworkCode(code)) {
        return { status: "retryable", error: err as Error };
      }
      return { status: "failure", error: err as Error };
    }
  }

  shutdown(): void {
    void this.agent.close();
  }
}

function gzipped(data: Uint8Array): Promise<Uint8Array> {
  return new Promise((resolve, reject) => gzip(data, (err, out) => (err ? reject(err) : resolve(out))));
}

/** The body's bytes, or undefined (the rest discarded) once it passes max. */
async function readAtMost(body: AsyncIterable<Uint8Array> & { destroy(): void }, max: number) {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > max) {
      body.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

const firstOf = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);
