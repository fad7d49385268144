// The chart's Prometheus rules with Debian's promtool (scripts/setup.d/60-prometheus.sh): the file
// is valid (`promtool check rules`) and the alerts fire, and stay quiet, as their unit tests say
// (`promtool test rules`: the fast and slow error-budget burns, the latency burn, limiter backend
// down, reconcile errors, leader lost, key expiring, scraper saturation, a target down or missing;
// the fault alerts on the series processes export in those faults are in fault-rules.test.ts);
// and every alert carries
// what an on-call engineer and Alertmanager's templates expect: summary, description, and a
// runbook_url that leads to its runbook in docs/observability.md.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
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

describe("alert annotations", () => {
  const alerts = (
    parse(readFileSync(RULES_FILE, "utf8")) as {
      groups: { rules: { alert?: string; annotations?: Record<string, string> }[] }[];
    }
  ).groups
    .flatMap((g) => g.rules)
    .filter((r) => r.alert);
  const doc = readFileSync(new URL("../../docs/observability.md", import.meta.url), "utf8");
  /** GitHub's anchors of the doc's headings. */
  const anchors = new Set(
    [...doc.matchAll(/^#+ (.+)$/gm)].map((m) =>
      (m[1] as string)
        .toLowerCase()
        .replace(/[^a-z0-9 _-]/g, "")
        .replaceAll(" ", "-"),
    ),
  );

  it("gives every alert a summary, a description and a runbook_url to its runbook", () => {
    expect(alerts.length).toBeGreaterThan(10);
    for (const a of alerts) {
      const notes = a.annotations ?? {};
      expect(Object.keys(notes).sort(), a.alert).toEqual(["description", "runbook_url", "summary"]);
      const url = new URL(notes.runbook_url as string);
      expect(`${url.origin}${url.pathname}`).toBe(
        "https://github.com/capstan-dev/capstan/blob/main/docs/observability.md",
      );
      expect(url.hash, a.alert).toBe(`#${(a.alert as string).toLowerCase()}`);
      expect(anchors.has(url.hash.slice(1)), `docs/observability.md has no heading for ${url.hash}`).toBe(true);
    }
  });
});
