// Search keys: the list (rotation advice past 90 days) and the form: name, validity window, scope
// as a multi-select of the knowledge bases the user may see, IP restriction checked as CIDRs.
import { searchKeySpec } from "@capstan/shared/api";
import { useEffect, useState } from "preact/hooks";
import { badCidrs } from "../../../src/cidr.ts";
import {
  deletedSchema,
  itemsOf,
  type KeyRequest,
  knowledgeRowSchema,
  revealedKeySchema,
  searchKeyRowSchema,
} from "../../../src/wire.ts";
import {
  type ApiError,
  del,
  getWhileCurrent,
  nsPath,
  type Permissions,
  post,
  type RevealedKey,
  type SearchKeyRow,
} from "../api.ts";
import {
  createChecked,
  DataTable,
  ErrorText,
  Field,
  FilterBar,
  KeyOnce,
  ReadyBadge,
  useItems,
  utcIso,
  when,
} from "../ui.tsx";

const DAY_MS = 86_400_000;

/** What the New search key form holds (dates as a datetime-local input gives them, read as UTC). */
interface SearchKeyForm {
  name: string;
  keyName: string;
  validFrom: string;
  validUntil: string;
  cidrs: string;
  rotate: boolean;
}

/** The spec the form asks for, or which of its IPs and CIDRs are not ones. */
function specOf(f: SearchKeyForm, scope: string[]): { spec: Record<string, unknown> } | { error: string } {
  const cidrs = f.cidrs.split(/[\s,]+/).filter(Boolean);
  const bad = badCidrs(cidrs);
  if (bad.length) return { error: `not an IP address or CIDR: ${bad.join(", ")}` };
  return {
    spec: {
      keyName: f.keyName,
      knowledgeIds: scope,
      ...(f.validFrom ? { validFrom: utcIso(f.validFrom) } : {}),
      ...(f.validUntil ? { validUntil: utcIso(f.validUntil) } : {}),
      ...(cidrs.length ? { allowedCIDRs: cidrs } : {}),
      ...(f.rotate ? { rotation: { every: "2160h", overlap: "24h" } } : {}),
    },
  };
}

/** Whether the validity window is longer than 90 days, past which rotating the key is advised. */
function longWindow(f: SearchKeyForm): boolean {
  const windowMs =
    f.validUntil &&
    new Date(`${f.validUntil}Z`).getTime() - (f.validFrom ? new Date(`${f.validFrom}Z`).getTime() : Date.now());
  return typeof windowMs === "number" && windowMs > 90 * DAY_MS;
}

/** The knowledge bases of `ns` the user may see, for the scope; a failure goes to `onError`. */
function useKnowledgeBases(ns: string, onError: (message: string) => void) {
  const [kbs, setKbs] = useState<{ knowledgeId: string; name: string }[]>([]);
  useEffect(
    () =>
      getWhileCurrent(
        nsPath(ns, "knowledgebases"),
        itemsOf(knowledgeRowSchema),
        (r) => setKbs(r.items),
        (e) => onError(e.message),
      ),
    [ns],
  );
  return kbs;
}

function CreateSearchKey({ ns, onCreated }: { ns: string; onCreated: () => void }) {
  const [f, setF] = useState<SearchKeyForm>({
    name: "",
    keyName: "",
    validFrom: "",
    validUntil: "",
    cidrs: "",
    rotate: true,
  });
  const [scope, setScope] = useState<string[]>([]);
  const [error, setError] = useState<string>();
  const kbs = useKnowledgeBases(ns, setError);
  const submit = async (e: Event) => {
    e.preventDefault();
    const asked = specOf(f, scope);
    if ("error" in asked) return setError(asked.error);
    const problem = await createChecked(
      searchKeySpec,
      nsPath(ns, "searchkeys"),
      f.name,
      asked.spec,
      searchKeyRowSchema,
    );
    if (problem) setError(problem);
    else onCreated();
  };
  return (
    <form class="card" aria-labelledby="new-search-key" onSubmit={submit}>
      <h2 id="new-search-key">New search key</h2>
      <Field label="Resource name" id="sk-name">
        <input id="sk-name" required value={f.name} onInput={(e) => setF({ ...f, name: e.currentTarget.value })} />
      </Field>
      <Field label="Key name" id="sk-label">
        <input
          id="sk-label"
          required
          maxLength={128}
          value={f.keyName}
          onInput={(e) => setF({ ...f, keyName: e.currentTarget.value })}
        />
      </Field>
      <ValidityFields f={f} setF={setF} />
      <Field label="Scope: knowledge bases" id="sk-scope" hint="Least privilege: only what the client needs.">
        <select
          id="sk-scope"
          multiple
          required
          size={Math.min(6, Math.max(2, kbs.length))}
          aria-describedby="sk-scope-hint"
          onChange={(e) => setScope([...e.currentTarget.selectedOptions].map((o) => o.value))}
        >
          {kbs.map((k) => (
            <option key={k.knowledgeId} value={k.knowledgeId} selected={scope.includes(k.knowledgeId)}>
              {k.knowledgeId} ({k.name})
            </option>
          ))}
        </select>
      </Field>
      <Field
        label="Allowed client IPs or CIDRs (empty: any)"
        id="sk-cidrs"
        hint="Comma- or space-separated, e.g. 10.0.0.0/8, 2001:db8::/32."
      >
        <input
          id="sk-cidrs"
          aria-describedby="sk-cidrs-hint"
          value={f.cidrs}
          onInput={(e) => setF({ ...f, cidrs: e.currentTarget.value })}
        />
      </Field>
      <button type="submit">Create search key</button>
      <ErrorText error={error} />
    </form>
  );
}

/** The validity window (from, until), the advice past 90 days, and automatic rotation. */
function ValidityFields({ f, setF }: { f: SearchKeyForm; setF: (f: SearchKeyForm) => void }) {
  const setDate = (k: "validFrom" | "validUntil") => (e: Event) =>
    setF({ ...f, [k]: (e.currentTarget as HTMLInputElement).value });
  return (
    <>
      <Field label="Valid from, UTC (empty: now)" id="sk-from">
        <input id="sk-from" type="datetime-local" value={f.validFrom} onInput={setDate("validFrom")} />
      </Field>
      <Field label="Valid until, UTC (empty: no end)" id="sk-until">
        <input id="sk-until" type="datetime-local" value={f.validUntil} onInput={setDate("validUntil")} />
      </Field>
      {longWindow(f) ? (
        <p class="hint" role="note">
          This window is longer than 90 days: rotating the key about every 90 days is advised (automatic rotation
          below).
        </p>
      ) : null}
      <div class="field checkbox">
        <input
          id="sk-rotate"
          type="checkbox"
          checked={f.rotate}
          onChange={(e) => setF({ ...f, rotate: e.currentTarget.checked })}
        />
        <label for="sk-rotate">Rotate automatically every 90 days (the old key stays valid 24 h)</label>
      </div>
    </>
  );
}

/** The ready-to-paste search call shown with a new key. */
function searchSnippets(endpoint: string, key: string) {
  const code = `curl ${endpoint}/v1/rag/search \\\n  -H "Authorization: Bearer ${key}" \\\n  -H "Content-Type: application/json" \\\n  -d '{"knowledgeIds": ["kb_…"], "text": "your question", "maxResults": 10, "minSimilarity": 0.75}'`;
  return [{ title: "curl", code }];
}

export function SearchKeysPage({ ns, can }: { ns: string; can: Permissions }) {
  const { items, error: listError, reload: load } = useItems(nsPath(ns, "searchkeys"), searchKeyRowSchema);
  const [filter, setFilter] = useState("");
  const [creating, setCreating] = useState(false);
  const [shown, setShown] = useState<RevealedKey>();
  const [error, setError] = useState<string>();
  const showKey = async (name: string, rotate: boolean) => {
    setError(undefined);
    try {
      setShown(
        await post(nsPath(ns, `searchkeys/${encodeURIComponent(name)}/key`), revealedKeySchema, {
          rotate,
        } satisfies KeyRequest),
      );
    } catch (err) {
      setError((err as ApiError).message);
    }
  };
  const remove = (name: string) =>
    confirm(`Delete search key ${name}?`) &&
    del(nsPath(ns, `searchkeys/${encodeURIComponent(name)}`), deletedSchema).then(load, (e: ApiError) =>
      setError(e.message),
    );
  const rows = (items ?? []).filter((k) =>
    `${k.name} ${k.keyName} ${k.knowledgeIds.join(" ")}`.toLowerCase().includes(filter.toLowerCase()),
  );
  if (shown) {
    const onDone = () => {
      setShown(undefined);
      void load();
    };
    return (
      <KeyOnce
        value={shown.key}
        snippets={searchSnippets(shown.endpoint ?? "<search URL>", shown.key)}
        onDone={onDone}
      />
    );
  }
  return (
    <section aria-labelledby="sk-title">
      <h1 id="sk-title">Search keys in {ns}</h1>
      <ErrorText error={error ?? listError} />
      <FilterBar id="sk-filter" value={filter} onChange={setFilter}>
        {can.searchkeys?.create ? (
          <button type="button" aria-expanded={creating} onClick={() => setCreating(!creating)}>
            New search key
          </button>
        ) : null}
      </FilterBar>
      {creating ? (
        <CreateSearchKey
          ns={ns}
          onCreated={() => {
            setCreating(false);
            void load();
          }}
        />
      ) : null}
      {items && items.length === 0 ? <p>No search keys in this namespace yet.</p> : null}
      {rows.length ? <SearchKeyTable rows={rows} can={can} showKey={showKey} remove={remove} /> : null}
    </section>
  );
}

interface RowActions {
  can: Permissions;
  /** Shows the key of a search key once, a new one when `rotate`. */
  showKey: (name: string, rotate: boolean) => void;
  remove: (name: string) => void;
}

function SearchKeyTable({ rows, ...actions }: { rows: SearchKeyRow[] } & RowActions) {
  return (
    <DataTable
      caption="Search keys"
      captionHidden
      columns={["Key name", "Scope", "Valid", "IPs", "Key prefix", "Ready", "Actions"]}
    >
      {rows.map((k) => (
        <tr key={k.name}>
          <td>
            {k.keyName} <small>({k.name})</small>
          </td>
          <td>{k.knowledgeIds.join(", ")}</td>
          <td>
            {when(k.validFrom)} – {k.validUntil ? when(k.validUntil) : "no end"}
            {k.rotationAdvised ? <div class="hint">Issued {k.keyAgeDays} days ago: rotation is advised.</div> : null}
          </td>
          <td>{k.allowedCIDRs.join(", ") || "any"}</td>
          <td>
            <code>{k.keyPrefix ?? "—"}</code>
          </td>
          <td>
            <ReadyBadge ready={k.ready} />
          </td>
          <td>
            <KeyActions k={k} {...actions} />
          </td>
        </tr>
      ))}
    </DataTable>
  );
}

/** Add key (the first time), Rotate key (after), Delete: each as the user's access allows. */
function KeyActions({ k, can, showKey, remove }: { k: SearchKeyRow } & RowActions) {
  // Showing a key reads its Secret; rotating deletes the Secret; both touch the search key.
  const mayShow = Boolean(can.secrets?.get && can.searchkeys?.patch);
  return (
    <>
      {mayShow && !k.keySupplied && !k.keyRevealed ? (
        <button type="button" aria-label={`Add key for ${k.keyName}`} onClick={() => showKey(k.name, false)}>
          Add key
        </button>
      ) : null}
      {mayShow && can.secrets?.delete && !k.keySupplied && k.keyRevealed ? (
        <button type="button" aria-label={`Rotate key of ${k.keyName}`} onClick={() => showKey(k.name, true)}>
          Rotate key
        </button>
      ) : null}
      {can.searchkeys?.delete ? (
        <button type="button" class="danger" aria-label={`Delete ${k.keyName}`} onClick={() => remove(k.name)}>
          Delete
        </button>
      ) : null}
    </>
  );
}
