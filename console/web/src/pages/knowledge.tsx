// Knowledge bases: the list (documents, chunks, failed sources) with "New knowledge base"
// (knowledge-new.tsx), and one knowledge base with its counts and ingestion progress (search's
// current counts, uploads through its documents API included), sources, uploaded documents,
// document upload (Markdown, text, HTML, PDF: the file's own bytes, converted to Markdown by the
// console) and a "try a search" box on the real search API.
import { useState } from "preact/hooks";
import type { z } from "zod";
import { knowledgeRowSchema, searchHitsSchema, type TrySearchRequest } from "../../../src/wire.ts";
import { type ApiError, type KnowledgeRow, nsPath, type Permissions, post, upload } from "../api.ts";
import { DataTable, ErrorText, Field, FilterBar, ReadyBadge, useItem, useItems } from "../ui.tsx";
import { CreateKnowledgeBase } from "./knowledge-new.tsx";

/** The content type each accepted file extension is sent with. */
const TYPES: Record<string, string> = {
  md: "text/markdown",
  markdown: "text/markdown",
  txt: "text/plain",
  text: "text/plain",
  html: "text/html",
  htm: "text/html",
  pdf: "application/pdf",
};

/** The most the console takes (MAX_FILE_BYTES in console/src/routes/documents.ts): checked before sending. */
const MAX_FILE_BYTES = 8 * 1024 * 1024;

function Upload({ ns, kb, onDone }: { ns: string; kb: KnowledgeRow; onDone: () => void }) {
  const [error, setError] = useState<string>();
  const [note, setNote] = useState<string>();
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="card"
      aria-labelledby="upload-title"
      onSubmit={async (e) => {
        e.preventDefault();
        setError(undefined);
        setNote(undefined);
        const file = (e.currentTarget.elements.namedItem("document") as HTMLInputElement).files?.[0];
        if (!file) return setError("choose a file");
        const contentType = TYPES[file.name.split(".").pop()?.toLowerCase() ?? ""];
        if (!contentType)
          return setError("only Markdown (.md), plain text (.txt), HTML (.html) and PDF (.pdf) documents are accepted");
        if (file.size === 0) return setError(`${file.name} is empty`);
        if (file.size > MAX_FILE_BYTES)
          return setError(`${file.name} is larger than 8 MiB: split it or serve it from a URL source`);
        setBusy(true);
        try {
          const path = `knowledgebases/${encodeURIComponent(kb.name)}/documents?fileName=${encodeURIComponent(file.name)}`;
          await upload(nsPath(ns, path), file, contentType, knowledgeRowSchema);
          setNote(`${file.name} added: the operator ingests it now.`);
          onDone();
        } catch (err) {
          setError((err as ApiError).message);
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2 id="upload-title">Upload a document</h2>
      <Field label="Document (Markdown, text, HTML or PDF)" id="document">
        <input id="document" name="document" type="file" accept=".md,.markdown,.txt,.text,.html,.htm,.pdf" />
      </Field>
      <button type="submit" disabled={busy}>
        {busy ? "Uploading…" : "Upload"}
      </button>
      {note ? <p aria-live="polite">{note}</p> : null}
      <ErrorText error={error} />
    </form>
  );
}

function TrySearch({ ns, kb }: { ns: string; kb: KnowledgeRow }) {
  const [text, setText] = useState("");
  const [hits, setHits] = useState<z.output<typeof searchHitsSchema>["results"]>();
  const [error, setError] = useState<string>();
  return (
    <form
      class="card"
      aria-labelledby="try-title"
      onSubmit={async (e) => {
        e.preventDefault();
        setError(undefined);
        try {
          const r = await post(nsPath(ns, `knowledgebases/${encodeURIComponent(kb.name)}/search`), searchHitsSchema, {
            text,
          } satisfies TrySearchRequest);
          setHits(r.results);
        } catch (err) {
          setError((err as ApiError).message);
        }
      }}
    >
      <h2 id="try-title">Try a search</h2>
      <Field
        label="Search text"
        id="try-text"
        hint="Runs on the search API with a search key of this namespace that covers this knowledge base."
      >
        <input
          id="try-text"
          type="search"
          required
          aria-describedby="try-text-hint"
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
        />
      </Field>
      <button type="submit">Search</button>
      <ErrorText error={error} />
      {hits ? (
        <ol aria-label="Search results">
          {hits.length === 0 ? <li>No passage is similar enough.</li> : null}
          {hits.map((h, i) => (
            <li key={i} data-testid="search-hit">
              <strong>{h.docsName}</strong> <small>score {h.score.toFixed(3)}</small>
              <p>{h.text}</p>
            </li>
          ))}
        </ol>
      ) : null}
    </form>
  );
}

export function KnowledgePage({ ns, name, can }: { ns: string; name: string; can: Permissions }) {
  const {
    item: kb,
    error,
    reload: load,
  } = useItem(nsPath(ns, `knowledgebases/${encodeURIComponent(name)}`), knowledgeRowSchema);
  if (!kb) return error ? <ErrorText error={error} /> : <p>Loading…</p>;
  return (
    <section aria-labelledby="kb-title">
      <p>
        <a href="#/knowledge">← Knowledge bases</a>
      </p>
      <h1 id="kb-title">{kb.knowledgeId}</h1>
      <p>{kb.description}</p>
      <p>
        <ReadyBadge ready={kb.ready} />{" "}
        <span data-testid="kb-counts">
          {kb.documents} documents
          {kb.uploaded ? ` (${kb.uploaded} uploaded)` : ""}, {kb.chunks} chunks
          {kb.progress ? `, ingestion ${kb.progress}` : ""}
          {kb.failures ? `, ${kb.failures} failed sources: ${kb.failedSources.join(", ")}` : ""}
        </span>{" "}
        <button type="button" onClick={load}>
          Refresh
        </button>
      </p>
      <h2>Sources</h2>
      <ul>
        {kb.sources.map((s) => (
          <li key={s.name}>
            {s.name}{" "}
            <small>
              ({s.kind}: {s.detail})
            </small>
            {kb.failedSources.includes(s.name) ? <strong class="error-inline"> failed</strong> : null}
          </li>
        ))}
      </ul>
      {kb.uploadedDocuments.length > 0 ? (
        <>
          <h2>Uploaded through the documents API</h2>
          <ul aria-label="Uploaded documents">
            {kb.uploadedDocuments.map((d) => (
              <li key={d.name}>
                {d.name}{" "}
                <small>
                  ({d.format}, {d.chunks} chunks)
                </small>
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {can.knowledgebases?.patch && can.configmaps?.create ? <Upload ns={ns} kb={kb} onDone={load} /> : null}
      <TrySearch ns={ns} kb={kb} />
    </section>
  );
}

export function KnowledgeList({ ns, can }: { ns: string; can: Permissions }) {
  const { items, error } = useItems(nsPath(ns, "knowledgebases"), knowledgeRowSchema);
  const [filter, setFilter] = useState("");
  const [creating, setCreating] = useState(false);
  const rows = (items ?? []).filter((k) => `${k.name} ${k.knowledgeId}`.includes(filter.toLowerCase()));
  return (
    <section aria-labelledby="kbs-title">
      <h1 id="kbs-title">Knowledge bases in {ns}</h1>
      <ErrorText error={error} />
      <FilterBar id="kb-filter" value={filter} onChange={setFilter}>
        {can.knowledgebases?.create ? (
          <button type="button" onClick={() => setCreating(!creating)} aria-expanded={creating}>
            New knowledge base
          </button>
        ) : null}
      </FilterBar>
      {creating ? (
        <CreateKnowledgeBase
          ns={ns}
          onCreated={(name) => {
            location.hash = `#/knowledge/${encodeURIComponent(name)}`;
          }}
        />
      ) : null}
      {items && items.length === 0 ? <p>No knowledge bases in this namespace.</p> : null}
      <DataTable
        caption="Knowledge bases"
        captionHidden
        columns={["Id", "Sources", "Documents", "Chunks", "Failed sources", "Ready"]}
      >
        {rows.map((k) => (
          <tr key={k.name}>
            <td>
              <a href={`#/knowledge/${encodeURIComponent(k.name)}`}>{k.knowledgeId}</a>
            </td>
            <td>{k.sources.length}</td>
            <td>{k.documents}</td>
            <td>{k.chunks}</td>
            <td>{k.failedSources.join(", ") || "none"}</td>
            <td>
              <ReadyBadge ready={k.ready} />
            </td>
          </tr>
        ))}
      </DataTable>
    </section>
  );
}
