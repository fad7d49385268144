// "Try a chat" (an Agent, through the real gateway with the key of a channel you pick) and "try a
// scrape" (a Scraper, on a URL you give): one real call each, the answer shown. The console reads
// the channel's or scraper's key with your token, so what RBAC lets you read decides.
import { useEffect, useState } from "preact/hooks";
import type { z } from "zod";
import {
  type ChatRequest,
  channelRowSchema,
  chatAnswerSchema,
  itemsOf,
  type ScrapeRequest,
  scrapeAnswerSchema,
} from "../../../src/wire.ts";
import { type ApiError, type Channel, getWhileCurrent, nsPath, post } from "../api.ts";
import { ErrorText, Field } from "../ui.tsx";

/** A form's one call: its result, whether it runs, and its error in words. */
function useCall<T>() {
  const [result, setResult] = useState<T>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const run = async (e: Event, call: () => Promise<T>) => {
    e.preventDefault();
    setError(undefined);
    setResult(undefined);
    setBusy(true);
    try {
      setResult(await call());
    } catch (err) {
      setError((err as ApiError).message);
    } finally {
      setBusy(false);
    }
  };
  return { result, busy, error, setError, run };
}

export function TryChat({ ns, agent }: { ns: string; agent: string }) {
  const [channels, setChannels] = useState<Channel[]>();
  const [channel, setChannel] = useState("");
  const [message, setMessage] = useState("");
  const { result: answer, busy, error, setError, run } = useCall<z.output<typeof chatAnswerSchema>>();
  useEffect(
    () =>
      getWhileCurrent(
        nsPath(ns, "accesschannels"),
        itemsOf(channelRowSchema),
        (r) => {
          const mine = r.items.filter((c) => c.agent === agent);
          setChannels(mine);
          setChannel(mine[0]?.name ?? "");
        },
        (e) => setError(e.message),
      ),
    [ns, agent],
  );
  const id = `chat-${agent}`;
  return (
    <form
      aria-labelledby={`${id}-title`}
      onSubmit={(e) =>
        run(e, () =>
          post(nsPath(ns, `agents/${encodeURIComponent(agent)}/chat`), chatAnswerSchema, {
            channel,
            message,
          } satisfies ChatRequest),
        )
      }
    >
      <h3 id={`${id}-title`}>Try a chat</h3>
      {channels && channels.length === 0 ? <p>No access channel serves this agent: create one first.</p> : null}
      <Field label="Channel" id={`${id}-channel`} hint="Its key is used, as a client of the channel would.">
        <select
          id={`${id}-channel`}
          aria-describedby={`${id}-channel-hint`}
          value={channel}
          onChange={(e) => setChannel(e.currentTarget.value)}
        >
          {(channels ?? []).map((c) => (
            <option key={c.name} value={c.name}>
              {c.channelName} ({c.name})
            </option>
          ))}
        </select>
      </Field>
      <Field label="Message" id={`${id}-message`}>
        <textarea
          id={`${id}-message`}
          required
          rows={3}
          value={message}
          onInput={(e) => setMessage(e.currentTarget.value)}
        />
      </Field>
      <button type="submit" disabled={busy || !channel}>
        {busy ? "Sending…" : "Send"}
      </button>
      <ErrorText error={error} />
      {answer ? (
        <blockquote aria-label="Answer" data-testid="chat-answer">
          {answer.answer}
          {answer.model ? <small> — {answer.model}</small> : null}
        </blockquote>
      ) : null}
    </form>
  );
}

export function TryScrape({ ns, scraper }: { ns: string; scraper: string }) {
  const [url, setUrl] = useState("");
  const { result: page, busy, error, run } = useCall<z.output<typeof scrapeAnswerSchema>>();
  const id = `scrape-${scraper}`;
  return (
    <form
      aria-labelledby={`${id}-title`}
      onSubmit={(e) =>
        run(e, () =>
          post(nsPath(ns, `scrapers/${encodeURIComponent(scraper)}/scrape`), scrapeAnswerSchema, {
            url,
          } satisfies ScrapeRequest),
        )
      }
    >
      <h3 id={`${id}-title`}>Try a scrape</h3>
      <Field label="URL" id={`${id}-url`} hint="Scraped by this scraper; its Markdown is shown below.">
        <input
          id={`${id}-url`}
          type="url"
          required
          aria-describedby={`${id}-url-hint`}
          value={url}
          onInput={(e) => setUrl(e.currentTarget.value)}
        />
      </Field>
      <button type="submit" disabled={busy}>
        {busy ? "Scraping…" : "Scrape"}
      </button>
      <ErrorText error={error} />
      {page ? (
        <section aria-label="Scraped page">
          <p>
            <strong>{page.title || "(no title)"}</strong> <small>HTTP {page.statusCode}</small>
          </p>
          <pre data-testid="scrape-markdown">
            <code>{page.markdown}</code>
          </pre>
        </section>
      ) : null}
    </form>
  );
}
