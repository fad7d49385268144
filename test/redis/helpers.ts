// Helpers of the Redis topology tests: one chat request, and a logger whose lines a test can read.
import { createLogger, type Logger } from "@capstan/shared";

const body = { model: "m", messages: [{ role: "user" as const, content: "hi" }] };

/** One non-streamed chat completion with the channel's key. */
export function post(url: string, key: string, signal?: AbortSignal): Promise<Response> {
  return fetch(`${url}/api/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}

/** A logger that writes into `lines` (to assert on them) instead of stdout. */
export function quietLogger(lines: string[]): Logger {
  return createLogger({ name: "test", level: "info", destination: { write: (line: string) => lines.push(line) } });
}
