// One access channel: its settings (edit QPM and expiry, expire now, delete) and the "API access"
// tab, where "Add key" shows the channel's key once with ready-to-paste snippets.
import { useState } from "preact/hooks";
import {
  type ChannelEditRequest,
  channelRowSchema,
  deletedSchema,
  type KeyRequest,
  revealedKeySchema,
} from "../../../src/wire.ts";
import { type ApiError, type Channel, del, nsPath, type Permissions, patch, post, type RevealedKey } from "../api.ts";
import { ErrorText, Field, KeyOnce, ReadyBadge, useItem, utcIso, when } from "../ui.tsx";

function snippets(endpoint: string, key: string) {
  return [
    {
      title: "curl",
      code: `curl ${endpoint}/chat/completions \\\n  -H "Authorization: Bearer ${key}" \\\n  -H "Content-Type: application/json" \\\n  -d '{"model": "any", "messages": [{"role": "user", "content": "Hello"}]}'`,
    },
    {
      title: "OpenAI SDK (JavaScript)",
      code: `import OpenAI from "openai";\n\nconst client = new OpenAI({ baseURL: "${endpoint}", apiKey: "${key}" });\nconst reply = await client.chat.completions.create({\n  model: "any",\n  messages: [{ role: "user", content: "Hello" }],\n});\nconsole.log(reply.choices[0].message.content);`,
    },
    {
      title: "OpenAI SDK (Python)",
      code: `from openai import OpenAI\n\nclient = OpenAI(base_url="${endpoint}", api_key="${key}")\nreply = client.chat.completions.create(model="any", messages=[{"role": "user", "content": "Hello"}])\nprint(reply.choices[0].message.content)`,
    },
  ];
}

function ApiAccess({ ns, ch, can, reload }: { ns: string; ch: Channel; can: Permissions; reload: () => void }) {
  const [shown, setShown] = useState<RevealedKey>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  // Showing a key reads its Secret; issuing one deletes the Secret and touches the channel.
  const mayShow = Boolean(can.secrets?.get && can.accesschannels?.patch);
  const mayRotate = mayShow && Boolean(can.secrets?.delete);
  const act = async (rotate: boolean) => {
    setBusy(true);
    setError(undefined);
    try {
      setShown(
        await post(nsPath(ns, `accesschannels/${encodeURIComponent(ch.name)}/key`), revealedKeySchema, {
          rotate,
        } satisfies KeyRequest),
      );
    } catch (err) {
      setError((err as ApiError).message);
    } finally {
      setBusy(false);
    }
  };
  if (shown) {
    const endpoint = shown.endpoint ?? "<gateway URL>/api/v1";
    return (
      <KeyOnce
        value={shown.key}
        snippets={snippets(endpoint, shown.key)}
        onDone={() => {
          setShown(undefined);
          reload();
        }}
      />
    );
  }
  return (
    <div>
      <dl>
        <dt>Endpoint</dt>
        <dd>
          <code>{ch.endpoint ?? "—"}</code>
        </dd>
        <dt>Key</dt>
        <dd>
          <code>{ch.keyPrefix ?? "not issued yet"}</code>
          {ch.keyRevealed ? " (already shown once)" : ""}
        </dd>
      </dl>
      {ch.keySupplied ? (
        <p>This channel uses a key supplied in a Secret of your own; the console neither shows nor rotates it.</p>
      ) : (
        <div class="actions">
          {mayShow && !ch.keyRevealed ? (
            <button type="button" disabled={busy} onClick={() => act(false)}>
              Add key
            </button>
          ) : null}
          {mayRotate && ch.keyRevealed ? (
            <button type="button" disabled={busy} onClick={() => act(true)}>
              Rotate key
            </button>
          ) : null}
          {!mayShow ? <p class="hint">Your access does not allow showing or issuing this channel's key.</p> : null}
        </div>
      )}
      {busy ? <p aria-live="polite">Waiting for the operator to issue the key…</p> : null}
      <ErrorText error={error} />
    </div>
  );
}

function Settings({ ns, ch, can, reload }: { ns: string; ch: Channel; can: Permissions; reload: () => void }) {
  const [error, setError] = useState<string>();
  const path = nsPath(ns, `accesschannels/${encodeURIComponent(ch.name)}`);
  /** Runs a change of the channel, then reloads it; a refusal is shown in words. */
  const run = async (f: () => Promise<unknown>) => {
    setError(undefined);
    try {
      await f();
      reload();
    } catch (err) {
      setError((err as ApiError).message);
    }
  };
  const editable = Boolean(can.accesschannels?.patch);
  const remove = () => {
    if (confirm(`Delete channel ${ch.name}? Its key stops working at once.`)) {
      void run(async () => {
        await del(path, deletedSchema);
        location.hash = "#/channels";
      });
    }
  };
  return (
    <div>
      <dl>
        <dt>Agent</dt>
        <dd>{ch.agent}</dd>
        <dt>History</dt>
        <dd>{ch.keepHistory ? "kept" : "not kept"}</dd>
        <dt>Expiry</dt>
        <dd>{when(ch.expiresAt)}</dd>
        <dt>Status</dt>
        <dd>
          <ReadyBadge ready={ch.ready} /> {ch.ready.message}
        </dd>
      </dl>
      {editable ? <EditChannel ch={ch} path={path} run={run} /> : null}
      {can.accesschannels?.delete ? (
        <button type="button" class="danger" onClick={remove}>
          Delete channel
        </button>
      ) : null}
      <ErrorText error={error} />
    </div>
  );
}

/** The channel's rate limit and expiry, saved together; Expire now ends its key at once. */
function EditChannel({ ch, path, run }: { ch: Channel; path: string; run: (f: () => Promise<unknown>) => void }) {
  const [qpm, setQpm] = useState(String(ch.qpm));
  const [expiry, setExpiry] = useState(ch.expiresAt ? ch.expiresAt.slice(0, 16) : "");
  return (
    <form
      class="card"
      onSubmit={(e) => {
        e.preventDefault();
        void run(() =>
          patch(path, channelRowSchema, {
            qpm: Number(qpm),
            expiresAt: expiry ? utcIso(expiry) : null,
          } satisfies ChannelEditRequest),
        );
      }}
    >
      <Field label="Rate limit (requests per minute)" id="edit-qpm">
        <input
          id="edit-qpm"
          type="number"
          min={1}
          max={1000000}
          required
          value={qpm}
          onInput={(e) => setQpm(e.currentTarget.value)}
        />
      </Field>
      <Field label="Expiry, UTC (empty: never)" id="edit-expiry">
        <input
          id="edit-expiry"
          type="datetime-local"
          value={expiry}
          onInput={(e) => setExpiry(e.currentTarget.value)}
        />
      </Field>
      <button type="submit">Save</button>
      <button type="button" onClick={() => run(() => post(`${path}/expire`, channelRowSchema))}>
        Expire now
      </button>
    </form>
  );
}

export function ChannelPage({ ns, name, can }: { ns: string; name: string; can: Permissions }) {
  const {
    item: ch,
    error,
    reload: load,
  } = useItem(nsPath(ns, `accesschannels/${encodeURIComponent(name)}`), channelRowSchema);
  const [tab, setTab] = useState<"settings" | "access">("access");
  if (!ch) return error ? <ErrorText error={error} /> : <p>Loading…</p>;
  return (
    <section aria-labelledby="channel-title">
      <p>
        <a href="#/channels">← Access channels</a>
      </p>
      <h1 id="channel-title">{ch.channelName}</h1>
      <div role="tablist" aria-label="Channel">
        {(
          [
            ["access", "API access"],
            ["settings", "Settings"],
          ] as const
        ).map(([id, label]) => (
          <button
            key={id}
            type="button"
            role="tab"
            id={`tab-${id}`}
            aria-selected={tab === id}
            aria-controls={`panel-${id}`}
            onClick={() => setTab(id)}
          >
            {label}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`}>
        {tab === "access" ? (
          <ApiAccess ns={ns} ch={ch} can={can} reload={load} />
        ) : (
          <Settings ns={ns} ch={ch} can={can} reload={load} />
        )}
      </div>
    </section>
  );
}
