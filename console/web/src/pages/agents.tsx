// Agents and Scrapers: their settings and health (the Ready condition the operator writes), with
// "try a chat" on each agent and "try a scrape" on each scraper (try.tsx).
import { useEffect, useState } from "preact/hooks";
import { itemsOf, resourceRowSchema } from "../../../src/wire.ts";
import { getWhileCurrent, nsPath, type ResourceRow } from "../api.ts";
import { ErrorText, ReadyBadge } from "../ui.tsx";
import { TryChat, TryScrape } from "./try.tsx";

function settings(spec: Record<string, unknown>): string {
  // Never a secret: specs hold only references to Secrets, shown as such.
  return JSON.stringify(spec, null, 2);
}

function Table({ ns, plural, title }: { ns: string; plural: string; title: string }) {
  const [items, setItems] = useState<ResourceRow[]>();
  const [error, setError] = useState<string>();
  useEffect(
    () =>
      getWhileCurrent(
        nsPath(ns, plural),
        itemsOf(resourceRowSchema),
        (r) => setItems(r.items),
        (e) => setError(e.message),
      ),
    [ns, plural],
  );
  return (
    <section aria-labelledby={`${plural}-title`}>
      <h2 id={`${plural}-title`}>{title}</h2>
      <ErrorText error={error} />
      {items && items.length === 0 ? <p>None in this namespace.</p> : null}
      {(items ?? []).map((a) => (
        <details key={a.name} class="card">
          <summary>
            {a.name} <ReadyBadge ready={a.ready} /> {a.status.mode ? <small>mode {String(a.status.mode)}</small> : null}
          </summary>
          <p>{a.ready.message}</p>
          <pre>
            <code>{settings(a.spec)}</code>
          </pre>
          {plural === "agents" ? <TryChat ns={ns} agent={a.name} /> : <TryScrape ns={ns} scraper={a.name} />}
        </details>
      ))}
    </section>
  );
}

export function AgentsPage({ ns }: { ns: string }) {
  return (
    <section aria-labelledby="agents-page">
      <h1 id="agents-page">Agents and scrapers in {ns}</h1>
      <Table ns={ns} plural="agents" title="Agents" />
      <Table ns={ns} plural="scrapers" title="Scrapers" />
    </section>
  );
}
