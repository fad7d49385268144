// Small building blocks every page uses: an error shown in words, a labelled field, the Ready
// badge, the panel that shows a new key once with a copy button and ready-to-paste snippets, and
// the checked create that every "New …" form submits through, the loading of a list or one object,
// and the table every list is shown in.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { z } from "zod";
import { type CreateRequest, itemsOf } from "../../src/wire.ts";
import { type ApiError, getWhileCurrent, post, type Ready } from "./api.ts";

export function ErrorText({ error }: { error: string | undefined }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error}
    </p>
  );
}

export function Field(props: { label: string; id: string; hint?: string; children: ComponentChildren }) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      {props.children}
      {props.hint ? (
        <small id={`${props.id}-hint`} class="hint">
          {props.hint}
        </small>
      ) : null}
    </div>
  );
}

export function ReadyBadge({ ready }: { ready: Ready }) {
  const cls = ready.status === "True" ? "ok" : ready.status === "False" ? "bad" : "unknown";
  return (
    <span class={`badge ${cls}`} title={ready.message}>
      {ready.status === "True" ? "Ready" : `${ready.status === "False" ? "Not ready" : "Pending"}: ${ready.reason}`}
    </span>
  );
}

function CopyButton({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState("");
  return (
    <button
      type="button"
      aria-label={label}
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
          setDone("Copied");
        } catch {
          setDone("Copy failed: select the text and copy it by hand");
        }
      }}
    >
      {done || "Copy"}
    </button>
  );
}

/** A key shown once: it is in this component's state only and gone when the user leaves. */
export function KeyOnce(props: { value: string; snippets: { title: string; code: string }[]; onDone: () => void }) {
  return (
    <section class="key-once" aria-labelledby="key-once-title">
      <h3 id="key-once-title">Your new key</h3>
      <p>Copy it now: it is shown once. Anyone holding it can use it until it expires or is rotated.</p>
      <div class="key-row">
        <code data-testid="key-value">{props.value}</code>
        <CopyButton text={props.value} label="Copy the key" />
      </div>
      {props.snippets.map((s) => (
        <div key={s.title} class="snippet">
          <h4>{s.title}</h4>
          <pre>
            <code>{s.code}</code>
          </pre>
          <CopyButton text={s.code} label={`Copy the ${s.title} snippet`} />
        </div>
      ))}
      <button type="button" onClick={props.onDone}>
        I have copied the key
      </button>
    </section>
  );
}

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : "never");

/** A datetime-local input's value (no zone) read as UTC, as an ISO timestamp. */
export const utcIso = (local: string) => new Date(`${local}Z`).toISOString();

/**
 * Creates the resource `name` at `path` once `schema` (the CRD's own zod schema) accepts `spec`;
 * `answer` is the row schema the console answers the created resource with (wire.ts).
 * Answers undefined when created, else what is wrong in words: the fields the schema refuses, or
 * the console's own answer.
 */
export async function createChecked(
  schema: z.ZodType,
  path: string,
  name: string,
  spec: CreateRequest["spec"],
  answer: z.ZodType,
): Promise<string | undefined> {
  const checked = schema.safeParse(spec);
  if (!checked.success) return checked.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
  try {
    await post(path, answer, { name, spec } satisfies CreateRequest);
    return undefined;
  } catch (err) {
    return (err as ApiError).message;
  }
}

/** The filter box (and the page's own actions) above a list. */
export function FilterBar(props: {
  id: string;
  value: string;
  onChange: (v: string) => void;
  children?: ComponentChildren;
}) {
  return (
    <div class="toolbar">
      <label for={props.id}>Filter</label>
      <input id={props.id} type="search" value={props.value} onInput={(e) => props.onChange(e.currentTarget.value)} />
      {props.children}
    </div>
  );
}

/** The items of a list endpoint (each parsed with `item`), reloaded when `path` changes; errors in words. */
export function useItems<S extends z.ZodType>(
  path: string,
  item: S,
): { items: z.output<S>[] | undefined; error: string | undefined; reload: () => void } {
  const [items, setItems] = useState<z.output<S>[]>();
  const [error, setError] = useState<string>();
  const load = () => {
    setError(undefined);
    return getWhileCurrent(
      path,
      itemsOf(item),
      (r) => setItems(r.items),
      (e) => setError(e.message),
    );
  };
  useEffect(() => {
    setItems(undefined);
    return load();
  }, [path]);
  const reload = () => void load();
  return { items, error, reload };
}

/** One object of a get endpoint (parsed with `schema`), loaded when `path` changes and on reload(); errors in words. */
export function useItem<S extends z.ZodType>(
  path: string,
  schema: S,
): { item: z.output<S> | undefined; error: string | undefined; reload: () => void } {
  const [item, setItem] = useState<z.output<S>>();
  const [error, setError] = useState<string>();
  const load = () => getWhileCurrent(path, schema, setItem, (e) => setError(e.message));
  useEffect(load, [path]);
  const reload = () => void load();
  return { item, error, reload };
}

/**
 * A table: its caption (for screen readers only when `captionHidden`: the page's heading already
 * names the list), a header per column and the rows the page renders as children.
 */
export function DataTable(props: {
  caption: string;
  captionHidden?: boolean;
  columns: string[];
  children: ComponentChildren;
}) {
  return (
    <table>
      <caption class={props.captionHidden ? "sr-only" : undefined}>{props.caption}</caption>
      <thead>
        <tr>
          {props.columns.map((c) => (
            <th key={c} scope="col">
              {c}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{props.children}</tbody>
    </table>
  );
}
