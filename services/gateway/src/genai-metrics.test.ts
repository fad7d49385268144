import { createRegistry } from "@capstan/shared";
import { describe, expect, it } from "vitest";
import { genaiMetrics, MODEL_LABEL_LIMIT } from "./genai-metrics.ts";

describe("GenAI client metrics' model label", () => {
  it("keeps the first models seen and counts every later one as other", async () => {
    const registry = createRegistry({ defaultMetrics: false });
    const genai = genaiMetrics(registry);
    for (let i = 0; i < MODEL_LABEL_LIMIT + 5; i++) genai.client(`model-${i}`).done(0.1, undefined, undefined);
    genai.client("model-0").done(0.1, undefined, undefined);
    const counts = (await registry.getSingleMetric("gen_ai_client_operation_duration_seconds")?.get())?.values.filter(
      (v) => (v as { metricName?: string }).metricName === "gen_ai_client_operation_duration_seconds_count",
    );
    const byModel = Object.fromEntries((counts ?? []).map((v) => [v.labels.gen_ai_request_model, v.value]));
    expect(Object.keys(byModel)).toHaveLength(MODEL_LABEL_LIMIT + 1);
    expect(byModel["model-0"]).toBe(2);
    expect(byModel.other).toBe(5);
  });
});
