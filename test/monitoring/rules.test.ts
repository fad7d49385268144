// The chart's Prometheus rules with Debian's promtool (scripts/setup.d/60-prometheus.sh): the file
// is valid (`promtool check rules`) and the alerts fire, and stay quiet, as their unit tests say
// (`promtool test rules`: the fast and slow error-budget burns, the latency burn, limiter backend
// down, reconcile errors, leader lost, key expiring, scraper saturation).
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { PROMTOOL, RULES_FILE } from "./prometheus.ts";

const run = promisify(execFile);
const here = fileURLToPath(new URL(".", import.meta.url));

describe("monitoring rules (promtool)", () => {
  it("checks clean", async () => {
    const { stdout } = await run(PROMTOOL, ["check", "rules", RULES_FILE]);
    expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
  });

  it("passes the alerts' unit tests", async () => {
    const res = await run(PROMTOOL, ["test", "rules", "rules.test.yaml"], { cwd: here }).catch(
      (err: { stdout?: string; stderr?: string }) => {
        throw new Error(`promtool test rules failed:\n${err.stdout ?? ""}${err.stderr ?? ""}`);
      },
    );
    expect(res.stdout).toContain("SUCCESS");
  });
});
