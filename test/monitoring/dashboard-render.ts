// Renders a Grafana dashboard of the chart (charts/capstan/files/monitoring/dashboards/) from a
// real Prometheus into a PNG, the way an SRE would see it: each panel's expressions queried over a
// time range (`query_range`, as Grafana does), then drawn with uPlot in the test ground's Chromium
// by dashboard-page.js on Grafana's grid. No Grafana needed: the point is the panels' real data.
// test/monitoring/prometheus.test.ts renders the overview dashboard after its traffic and checks
// every panel drew data; with CAPSTAN_WRITE_DOCS=1 it also writes docs/observability/overview.png.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { launchChromium } from "../ground/chromium.ts";
import { type Variable, withVariables } from "./dashboard-vars.ts";

/** The parts of a Grafana panel the renderer reads. */
export interface DashboardPanel {
  title: string;
  type: string;
  gridPos: { x: number; y: number; w: number; h: number };
  fieldConfig?: { defaults?: { unit?: string } };
  targets: { expr: string; legendFormat?: string }[];
}

export interface Dashboard {
  title: string;
  panels: DashboardPanel[];
}

interface RangeSeries {
  metric: Record<string, string>;
  values: [number, string][];
}

/** One panel with the result of each of its targets, as the page draws it. */
interface PanelData {
  title: string;
  type: string;
  unit: string;
  gridPos: DashboardPanel["gridPos"];
  results: { expr: string; legendFormat?: string; series: RangeSeries[] }[];
}

export interface DashboardData {
  title: string;
  /** Unix seconds; `step` divides `end - start`. */
  start: number;
  end: number;
  step: number;
  /** Where the data came from, printed under the title. */
  source: string;
  panels: PanelData[];
}

/** What the page drew for one panel. */
export interface DrawnPanel {
  title: string;
  series: number;
  /** Non-empty samples drawn, over all series. */
  points: number;
}

export function readDashboard(file: string): Dashboard {
  return JSON.parse(readFileSync(file, "utf8")) as Dashboard;
}

/**
 * Queries every target of every panel over [start, end] with Grafana's kind of step (about 200
 * points across the range, at least 1 s), with the dashboard's variables put in as Grafana does.
 * Throws on a query Prometheus rejects.
 */
export async function queryDashboard(
  promUrl: string,
  dashboard: Dashboard,
  range: { start: number; end: number; source: string },
  /** The cluster, namespace and job variables' values; Grafana's "All" for those not given. */
  variables: Partial<Record<Variable, string>> = {},
): Promise<DashboardData> {
  const start = Math.floor(range.start);
  const step = Math.max(1, Math.round((range.end - start) / 200));
  const end = start + Math.ceil((range.end - start) / step) * step;
  const panels: PanelData[] = [];
  for (const p of dashboard.panels) {
    const results: PanelData["results"] = [];
    for (const target of p.targets) {
      const t = { ...target, expr: withVariables(target.expr, variables) };
      const res = await fetch(`${promUrl}/api/v1/query_range`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ query: t.expr, start: String(start), end: String(end), step: String(step) }),
      });
      const body = (await res.json()) as { status: string; error?: string; data?: { result: RangeSeries[] } };
      if (body.status !== "success") throw new Error(`${dashboard.title}: ${p.title}: ${body.error}`);
      results.push({ expr: t.expr, legendFormat: t.legendFormat, series: body.data?.result ?? [] });
    }
    panels.push({
      title: p.title,
      type: p.type,
      unit: p.fieldConfig?.defaults?.unit ?? "short",
      gridPos: p.gridPos,
      results,
    });
  }
  return { title: dashboard.title, start, end, step, source: range.source, panels };
}

const require = createRequire(import.meta.url);
const UPLOT_JS = require.resolve("uplot/dist/uPlot.iife.min.js");
const UPLOT_CSS = require.resolve("uplot/dist/uPlot.min.css");
const PAGE_JS = fileURLToPath(new URL("./dashboard-page.js", import.meta.url));

// Grafana's dark theme, roughly: the picture should look like what an SRE opens.
const STYLE = `
  body { margin: 0; background: #111217; color: #ccccdc; font: 13px system-ui, sans-serif; }
  #dashboard { padding: 16px; width: max-content; }
  header h1 { font-size: 18px; font-weight: 500; margin: 0 0 2px; }
  header p { margin: 0 0 12px; color: #8e8e99; font-size: 12px; }
  .grid { position: relative; }
  .panel { position: absolute; box-sizing: border-box; background: #181b1f; border: 1px solid #2c3235;
    border-radius: 2px; padding: 6px 8px; overflow: hidden; }
  .panel h2 { font-size: 13px; font-weight: 500; margin: 0 0 4px; white-space: nowrap; }
  .uplot { font-family: inherit; }
  .u-legend { color: #ccccdc; font-size: 11px; text-align: left; }
  .u-legend .u-marker { width: 10px; height: 3px; }
  .stat { display: flex; align-items: baseline; gap: 8px; }
  .stat-value { font-size: 32px; color: #73bf69; }
  .stat-label { color: #8e8e99; }
`;

/** Draws the dashboard in a fresh headless Chromium; returns the PNG and what each panel drew. */
export async function renderDashboard(data: DashboardData): Promise<{ png: Buffer; drawn: DrawnPanel[] }> {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 }, deviceScaleFactor: 1 });
    const css = readFileSync(UPLOT_CSS, "utf8");
    await page.setContent(`<!doctype html><html><head><meta charset="utf-8"><style>${css}${STYLE}</style></head>
      <body><div id="dashboard"></div></body></html>`);
    await page.addScriptTag({ content: readFileSync(UPLOT_JS, "utf8") });
    await page.addScriptTag({ content: readFileSync(PAGE_JS, "utf8") });
    // A string, not a function: the page runs it as written, with no transpiler helpers in it.
    const drawn = (await page.evaluate(`window.drawDashboard(${JSON.stringify(data)})`)) as DrawnPanel[];
    // uPlot paints on the next frames; wait for two before taking the picture.
    await page.evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))");
    const png = await page.locator("#dashboard").screenshot({ type: "png" });
    return { png, drawn };
  } finally {
    await browser.close();
  }
}
