import { describe, expect, it } from "vitest";
import { pointFrom } from "./usage.ts";
import { parsePrometheusText } from "./usage-metrics.ts";

describe("usage from the gateway's metrics", () => {
  it("sums requests, 429s and tokens per channel", () => {
    const text = [
      "# HELP capstan_gateway_channel_requests_total x",
      'capstan_gateway_channel_requests_total{channel="a/support",status="200"} 5',
      'capstan_gateway_channel_requests_total{channel="a/support",status="429"} 2',
      'capstan_gateway_tokens_total{channel="a/support",kind="prompt"} 30',
      'capstan_gateway_tokens_total{channel="a/support",kind="completion"} 12',
      "capstan_gateway_chat_request_duration_seconds_sum 1.5",
      "capstan_gateway_chat_request_duration_seconds_count 7",
    ].join("\n");
    const p = pointFrom(parsePrometheusText(text), 1);
    expect(p.channels["a/support"]).toEqual({ requests: 7, throttled: 2, tokens: 42 });
    expect(p.latencySum).toBe(1.5);
    expect(p.latencyCount).toBe(7);
  });
});
