// The form that creates a knowledge base, checked in the page with the CRD's own zod schema
// (knowledgeBaseSpec), then again by the console and the API server. Documents are added on the
// knowledge base's page (upload) or as URL sources here.
import { knowledgeBaseSpec } from "@capstan/shared/api";
import { useState } from "preact/hooks";
import { knowledgeRowSchema } from "../../../src/wire.ts";
import { nsPath } from "../api.ts";
import { createChecked, ErrorText, Field } from "../ui.tsx";

export function CreateKnowledgeBase({ ns, onCreated }: { ns: string; onCreated: (name: string) => void }) {
  const [form, setForm] = useState({ name: "", knowledgeId: "", description: "", url: "" });
  const [error, setError] = useState<string>();
  const set = (k: keyof typeof form) => (e: Event) =>
    setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value });
  return (
    <form
      class="card"
      aria-labelledby="new-kb"
      onSubmit={async (e) => {
        e.preventDefault();
        setError(undefined);
        const spec = {
          ...(form.knowledgeId ? { knowledgeId: form.knowledgeId } : {}),
          ...(form.description ? { description: form.description } : {}),
          sources: form.url ? [{ name: form.url, url: form.url }] : [],
        };
        const problem = await createChecked(
          knowledgeBaseSpec,
          nsPath(ns, "knowledgebases"),
          form.name,
          spec,
          knowledgeRowSchema,
        );
        if (problem) setError(problem);
        else onCreated(form.name);
      }}
    >
      <h2 id="new-kb">New knowledge base</h2>
      <Field label="Resource name" id="kb-name" hint="Lower-case letters, digits and '-'.">
        <input id="kb-name" required pattern="[a-z0-9]([\-a-z0-9]*[a-z0-9])?" value={form.name} onInput={set("name")} />
      </Field>
      <Field
        label="Knowledge id (empty: kb_ and the name)"
        id="kb-id"
        hint="What search clients name: kb_ then lower-case letters, digits and underscores."
      >
        <input id="kb-id" aria-describedby="kb-id-hint" value={form.knowledgeId} onInput={set("knowledgeId")} />
      </Field>
      <Field label="Description" id="kb-description">
        <input id="kb-description" maxLength={1024} value={form.description} onInput={set("description")} />
      </Field>
      <Field
        label="A web page to ingest (optional)"
        id="kb-url"
        hint="Fetched through the scraper; upload files on the next page."
      >
        <input id="kb-url" type="url" aria-describedby="kb-url-hint" value={form.url} onInput={set("url")} />
      </Field>
      <button type="submit">Create knowledge base</button>
      <ErrorText error={error} />
    </form>
  );
}
