// Usage: requests, 429s and tokens per channel, and latency, over the last hour, drawn with uPlot
// from the gateway's own metrics (read by the console); a table gives the totals in words. Below,
// the tokens the gateway keeps in Redis (they survive restarts): per channel, agent, upstream and
// model over the last 24 hours, with the cost where the Agent prices the model.
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { UsageRow } from "@capstan/shared/api";
import { type ChannelPoint, hourlyUsageSchema, usageSchema } from "../../../src/wire.ts";
import { getWhileCurrent, nsPath, type Usage } from "../api.ts";
import { DataTable, ErrorText } from "../ui.tsx";

type HourlyRow = UsageRow;

/** The rows of the last hours summed per channel, agent, upstream and model. */
function totals(rows: HourlyRow[]): HourlyRow[] {
  const by = new Map<string, HourlyRow>();
  for (const r of rows) {
    const key = [r.channel, r.agent, r.upstream, r.model].join("\t");
    const t = by.get(key);
    if (!t) {
      by.set(key, { ...r, ...(r.cost ? { cost: { ...r.cost } } : {}) });
      continue;
    }
    t.prompt += r.prompt;
    t.completion += r.completion;
    t.requests += r.requests;
    if (r.cost && t.cost) t.cost.amount += r.cost.amount;
  }
  return [...by.values()];
}

function KeptUsage({ ns }: { ns: string }) {
  const [rows, setRows] = useState<HourlyRow[]>();
  const [error, setError] = useState<string>();
  useEffect(
    () =>
      getWhileCurrent(
        nsPath(ns, "usage/hourly?hours=24"),
        hourlyUsageSchema,
        (r) => setRows(totals(r.rows)),
        (e) => setError(e.message),
      ),
    [ns],
  );
  return (
    <>
      {/* Not an alert: the charts above work without it (no Redis, or only Prometheus configured). */}
      {error ? <p class="note">Tokens kept by the gateway: {error}</p> : null}
      <DataTable
        caption="Tokens in the last 24 hours, kept by the gateway (survive restarts)"
        columns={["Channel", "Agent", "Upstream", "Model", "Requests", "Prompt tokens", "Completion tokens", "Cost"]}
      >
        {(rows ?? []).map((r) => (
          <tr key={`${r.channel}/${r.upstream}/${r.model}`} data-testid={`kept-${r.channel}-${r.upstream}`}>
            <th scope="row">{r.channel}</th>
            <td>{r.agent}</td>
            <td>{r.upstream}</td>
            <td>{r.model}</td>
            <td>{r.requests}</td>
            <td>{r.prompt}</td>
            <td>{r.completion}</td>
            <td>{r.cost ? `${r.cost.amount.toFixed(4)} ${r.cost.currency}` : "—"}</td>
          </tr>
        ))}
      </DataTable>
    </>
  );
}

const COLORS = ["#0969da", "#cf222e", "#1a7f37", "#8250df", "#bf8700", "#57606a"];

/** The increase of a cumulative counter between consecutive points (a restart counts from zero). */
function deltas(values: number[]): number[] {
  return values.map((v, i) => (i === 0 ? 0 : v >= (values[i - 1] as number) ? v - (values[i - 1] as number) : v));
}

function Chart({
  title,
  times,
  series,
}: {
  title: string;
  times: number[];
  series: { label: string; values: number[] }[];
}) {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!el.current || times.length === 0) return;
    const plot = new uPlot(
      {
        title,
        width: Math.min(900, el.current.clientWidth || 900),
        height: 220,
        series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], width: 2 }))],
      },
      [times, ...series.map((s) => s.values)],
      el.current,
    );
    return () => plot.destroy();
  }, [title, times, series]);
  return <figure ref={el} aria-label={title} class="chart" />;
}

export function UsagePage({ ns }: { ns: string }) {
  const [usage, setUsage] = useState<Usage>();
  const [error, setError] = useState<string>();
  const load = () => getWhileCurrent(nsPath(ns, "usage"), usageSchema, setUsage, (e) => setError(e.message));
  useEffect(load, [ns]);
  const points = usage?.points ?? [];
  const times = points.map((p) => p.at / 1000);
  const per = (k: keyof ChannelPoint) =>
    (usage?.channels ?? []).map((c) => ({ label: c, values: deltas(points.map((p) => p.channels[c]?.[k] ?? 0)) }));
  const latency = [
    {
      label: "mean latency (s), all channels",
      values: points.map((p, i) => {
        const prev = points[i - 1];
        const n = prev ? p.latencyCount - prev.latencyCount : 0;
        return n > 0 && prev ? (p.latencySum - prev.latencySum) / n : 0;
      }),
    },
  ];
  const last = points.at(-1);
  return (
    <section aria-labelledby="usage-title">
      <h1 id="usage-title">Usage in {ns}</h1>
      <p>
        From the gateway's metrics, read by the console; each point is the increase since the one before.{" "}
        <button type="button" onClick={() => void load()}>
          Refresh
        </button>
      </p>
      <ErrorText error={error ?? usage?.warning ?? undefined} />
      <DataTable caption="Totals since the gateways started" columns={["Channel", "Requests", "429s", "Tokens"]}>
        {(usage?.channels ?? []).map((c) => (
          <tr key={c} data-testid={`usage-${c}`}>
            <th scope="row">{c}</th>
            <td>{last?.channels[c]?.requests ?? 0}</td>
            <td>{last?.channels[c]?.throttled ?? 0}</td>
            <td>{last?.channels[c]?.tokens ?? 0}</td>
          </tr>
        ))}
      </DataTable>
      <KeptUsage ns={ns} />
      {times.length > 1 ? (
        <>
          <Chart title="Requests" times={times} series={per("requests")} />
          <Chart title="429s (rate limited)" times={times} series={per("throttled")} />
          <Chart title="Tokens" times={times} series={per("tokens")} />
          <Chart title="Latency" times={times} series={latency} />
        </>
      ) : (
        <p>The charts start with the second reading (Refresh in a few seconds).</p>
      )}
    </section>
  );
}
