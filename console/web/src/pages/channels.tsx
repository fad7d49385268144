// Access channels: the filterable list and the form that creates one (validated in the page with
// the CRD's own zod schema, then again by the console and the API server).
import { accessChannelSpec } from "@capstan/shared/api";
import { useEffect, useState } from "preact/hooks";
import { channelRowSchema, itemsOf, resourceRowSchema } from "../../../src/wire.ts";
import { getWhileCurrent, nsPath, type Permissions } from "../api.ts";
import { createChecked, DataTable, ErrorText, Field, FilterBar, ReadyBadge, useItems, utcIso, when } from "../ui.tsx";

/** What the New channel form holds (the expiry as a datetime-local input gives it, read as UTC). */
interface ChannelForm {
  name: string;
  channelName: string;
  agent: string;
  qpm: string;
  expiresAt: string;
  keepHistory: boolean;
}

/** The spec the form asks for. */
function specOf(form: ChannelForm) {
  return {
    channelName: form.channelName,
    agentRef: { name: form.agent },
    qpm: Number(form.qpm),
    keepHistory: form.keepHistory,
    ...(form.expiresAt ? { expiresAt: utcIso(form.expiresAt) } : {}),
  };
}

/** The Agents of `ns` to pick from; the first becomes the form's agent until one is picked. */
function useAgents(ns: string, setForm: (f: (old: ChannelForm) => ChannelForm) => void, onError: (m: string) => void) {
  const [agents, setAgents] = useState<{ name: string }[]>([]);
  useEffect(
    () =>
      getWhileCurrent(
        nsPath(ns, "agents"),
        itemsOf(resourceRowSchema),
        (r) => {
          setAgents(r.items);
          setForm((f) => ({ ...f, agent: f.agent || r.items[0]?.name || "" }));
        },
        (e) => onError(e.message),
      ),
    [ns],
  );
  return agents;
}

function CreateChannel({ ns, onCreated }: { ns: string; onCreated: (name: string) => void }) {
  const [form, setForm] = useState<ChannelForm>({
    name: "",
    channelName: "",
    agent: "",
    qpm: "100",
    expiresAt: "",
    keepHistory: false,
  });
  const [error, setError] = useState<string>();
  const agents = useAgents(ns, setForm, setError);
  const set = (k: keyof ChannelForm) => (e: Event) => {
    const t = e.currentTarget as HTMLInputElement;
    setForm({ ...form, [k]: t.type === "checkbox" ? t.checked : t.value });
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    const problem = await createChecked(
      accessChannelSpec,
      nsPath(ns, "accesschannels"),
      form.name,
      specOf(form),
      channelRowSchema,
    );
    if (problem) setError(problem);
    else onCreated(form.name);
  };
  return (
    <form class="card" aria-labelledby="new-channel" onSubmit={submit}>
      <h2 id="new-channel">New access channel</h2>
      <Field label="Resource name" id="ch-name" hint="Lower-case letters, digits and '-'.">
        <input id="ch-name" required pattern="[a-z0-9]([\-a-z0-9]*[a-z0-9])?" value={form.name} onInput={set("name")} />
      </Field>
      <Field label="Channel name" id="ch-label">
        <input id="ch-label" required maxLength={128} value={form.channelName} onInput={set("channelName")} />
      </Field>
      <Field label="Agent" id="ch-agent">
        <select id="ch-agent" required value={form.agent} onChange={set("agent")}>
          {agents.map((a) => (
            <option key={a.name} value={a.name}>
              {a.name}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Rate limit (requests per minute)" id="ch-qpm">
        <input id="ch-qpm" type="number" min={1} max={1000000} required value={form.qpm} onInput={set("qpm")} />
      </Field>
      <Field label="Expiry, UTC (empty: never)" id="ch-expiry">
        <input id="ch-expiry" type="datetime-local" value={form.expiresAt} onInput={set("expiresAt")} />
      </Field>
      <div class="field checkbox">
        <input id="ch-history" type="checkbox" checked={form.keepHistory} onChange={set("keepHistory")} />
        <label for="ch-history">Keep conversation history</label>
      </div>
      <button type="submit">Create channel</button>
      <ErrorText error={error} />
    </form>
  );
}

export function ChannelsPage({ ns, can }: { ns: string; can: Permissions }) {
  const { items, error } = useItems(nsPath(ns, "accesschannels"), channelRowSchema);
  const [filter, setFilter] = useState("");
  const [creating, setCreating] = useState(false);
  const shown = (items ?? []).filter((c) =>
    `${c.name} ${c.channelName} ${c.agent}`.toLowerCase().includes(filter.toLowerCase()),
  );
  return (
    <section aria-labelledby="channels-title">
      <h1 id="channels-title">Access channels in {ns}</h1>
      <ErrorText error={error} />
      <FilterBar id="channel-filter" value={filter} onChange={setFilter}>
        {can.accesschannels?.create ? (
          <button type="button" onClick={() => setCreating(!creating)} aria-expanded={creating}>
            New channel
          </button>
        ) : null}
      </FilterBar>
      {creating ? (
        <CreateChannel
          ns={ns}
          onCreated={(name) => {
            location.hash = `#/channels/${encodeURIComponent(name)}`;
          }}
        />
      ) : null}
      {items === undefined && !error ? <p>Loading…</p> : null}
      {items && items.length === 0 ? <p>No access channels in this namespace yet.</p> : null}
      {shown.length > 0 ? (
        <DataTable
          caption="Access channels"
          captionHidden
          columns={["Name", "Agent", "QPM", "Expiry", "History", "Key prefix", "Ready"]}
        >
          {shown.map((c) => (
            <tr key={c.name}>
              <td>
                <a href={`#/channels/${encodeURIComponent(c.name)}`}>{c.channelName}</a> <small>({c.name})</small>
              </td>
              <td>{c.agent}</td>
              <td>{c.qpm}</td>
              <td>{when(c.expiresAt)}</td>
              <td>{c.keepHistory ? "kept" : "not kept"}</td>
              <td>
                <code>{c.keyPrefix ?? "—"}</code>
              </td>
              <td>
                <ReadyBadge ready={c.ready} />
              </td>
            </tr>
          ))}
        </DataTable>
      ) : null}
    </section>
  );
}
