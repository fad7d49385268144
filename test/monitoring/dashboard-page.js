// Runs inside Chromium (test/monitoring/dashboard-render.ts injects it after uPlot): draws one
// Grafana dashboard's panels from data already queried from Prometheus, laid out on Grafana's
// 24-column grid, with Grafana's dark colours, so the picture reads like the dashboard an SRE
// opens. `window.drawDashboard(model)` returns, per panel, how many series and points it drew.
/* global uPlot */

const COLUMN_PX = 56;
const ROW_PX = 32;
const PALETTE = ["#73bf69", "#f2cc0c", "#8ab8ff", "#ff780a", "#f2495c", "#5794f2", "#b877d9", "#705da0"];

/** Formats a value in one of the Grafana units the dashboards use, with `decimals` digits. */
function format(unit, v, decimals = 2) {
  if (v === null || v === undefined || !Number.isFinite(v)) return "–";
  const n = (x, d) => x.toFixed(Math.min(6, Math.max(0, d)));
  switch (unit) {
    case "percentunit":
      return `${n(v * 100, decimals - 2)}%`;
    case "reqps":
      return `${n(v, decimals)} req/s`;
    case "ops":
      return `${n(v, decimals)} ops/s`;
    case "s":
      return v < 1 ? `${n(v * 1000, decimals - 3)} ms` : `${n(v, decimals)} s`;
    case "d":
      return `${n(v, decimals)} days`;
    default:
      return n(v, decimals);
  }
}

/** Digits after the point that tell ticks `incr` apart. */
const decimalsFor = (incr) => (incr > 0 ? Math.max(0, -Math.floor(Math.log10(incr))) : 2);

/** Grafana's legend text: the target's legendFormat with {{label}} filled in, else the label set. */
function legend(series, legendFormat) {
  if (legendFormat) return legendFormat.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, k) => series.metric[k] ?? "");
  const labels = Object.entries(series.metric).filter(([k]) => k !== "__name__");
  if (labels.length === 0) return "value";
  return `{${labels.map(([k, v]) => `${k}="${v}"`).join(", ")}}`;
}

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** One time-series panel: every target's series on one shared time axis. */
function drawTimeseries(box, panel, model) {
  const times = [];
  for (let t = model.start; t <= model.end; t += model.step) times.push(t);
  const index = new Map(times.map((t, i) => [t, i]));
  const columns = [];
  const names = [];
  for (const target of panel.results) {
    for (const s of target.series) {
      const col = new Array(times.length).fill(null);
      for (const [t, v] of s.values) {
        const i = index.get(t);
        // Prometheus answers NaN for 0/0 (no requests yet): a gap, as Grafana draws it.
        if (i !== undefined && Number.isFinite(Number(v))) col[i] = Number(v);
      }
      columns.push(col);
      names.push(legend(s, target.legendFormat));
    }
  }
  const points = columns.reduce((sum, c) => sum + c.filter((v) => v !== null && Number.isFinite(v)).length, 0);
  const axis = { stroke: "#9fa7b3", grid: { stroke: "#2c3235", width: 1 }, ticks: { stroke: "#2c3235" } };
  const width = box.clientWidth - 16;
  const height = box.clientHeight - 44;
  new uPlot(
    {
      width,
      height,
      legend: { show: true, live: false },
      cursor: { show: false },
      scales: { x: { time: true } },
      axes: [
        { ...axis, space: 90, values: (_u, ticks) => ticks.map((t) => new Date(t * 1000).toISOString().slice(11, 19)) },
        {
          ...axis,
          size: 96,
          values: (_u, ticks, _axis, _space, incr) => ticks.map((v) => format(panel.unit, v, decimalsFor(incr))),
        },
      ],
      series: [
        {},
        ...names.map((label, i) => ({
          label,
          stroke: PALETTE[i % PALETTE.length],
          width: 2,
          fill: `${PALETTE[i % PALETTE.length]}22`,
          spanGaps: true,
          points: { show: false },
          value: (_u, v) => format(panel.unit, v),
        })),
      ],
    },
    [times, ...columns],
    box,
  );
  return { series: columns.length, points };
}

/** A stat panel: the last value of each series, large. */
function drawStat(box, panel) {
  let series = 0;
  let points = 0;
  for (const target of panel.results) {
    for (const s of target.series) {
      const last = s.values.at(-1);
      series++;
      if (last) points++;
      const row = el("div", "stat");
      row.append(el("span", "stat-value", format(panel.unit, last ? Number(last[1]) : null)));
      row.append(el("span", "stat-label", legend(s, target.legendFormat)));
      box.append(row);
    }
  }
  return { series, points };
}

window.drawDashboard = (model) => {
  const root = document.getElementById("dashboard");
  const header = el("header");
  header.append(el("h1", "", model.title));
  const range = `${new Date(model.start * 1000).toISOString().slice(0, 19)}Z – ${new Date(model.end * 1000)
    .toISOString()
    .slice(11, 19)}Z`;
  header.append(el("p", "", `${range} · ${model.source}`));
  root.append(header);
  const grid = el("div", "grid");
  const rows = Math.max(...model.panels.map((p) => p.gridPos.y + p.gridPos.h));
  // The panels are placed absolutely: the grid's own size is what the screenshot takes.
  grid.style.width = `${24 * COLUMN_PX}px`;
  grid.style.height = `${rows * ROW_PX}px`;
  root.append(grid);
  const drawn = [];
  for (const panel of model.panels) {
    const box = el("section", "panel");
    const { x, y, w, h } = panel.gridPos;
    Object.assign(box.style, {
      left: `${x * COLUMN_PX}px`,
      top: `${y * ROW_PX}px`,
      width: `${w * COLUMN_PX - 8}px`,
      height: `${h * ROW_PX - 8}px`,
    });
    box.append(el("h2", "", panel.title));
    grid.append(box);
    const counts = panel.type === "stat" ? drawStat(box, panel) : drawTimeseries(box, panel, model);
    drawn.push({ title: panel.title, ...counts });
  }
  return drawn;
};
