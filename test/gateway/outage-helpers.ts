// Helpers of the Redis-outage tests: concurrent bursts of chat requests spread over replicas, with
// the client-side time of each answer, and the largest number admitted in any sliding window.
import { internalUrlOf } from "./helpers.ts";

export interface Answer {
  status: number;
  /** Unix ms when the answer arrived (an admitted request was admitted no later than this). */
  at: number;
  /** Unix ms when the request was sent (it was admitted no earlier than this). */
  sentAt: number;
}

const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] });

export async function post(url: string, key: string): Promise<Answer> {
  const sentAt = Date.now();
  const r = await fetch(`${url}/api/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body,
  });
  await r.arrayBuffer();
  return { status: r.status, at: Date.now(), sentAt };
}

/** n requests at once, round-robin over the replicas' URLs. */
export function burst(urls: string[], key: string, n: number): Promise<Answer[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => post(urls[i % urls.length] as string, key)));
}

/** When each admitted request was sent (the earliest it can have been admitted). */
export function admittedAt(answers: Answer[]): number[] {
  return answers.filter((a) => a.status === 200).map((a) => a.sentAt);
}

/**
 * The most admissions any window of windowMs can hold, counting each at the time it was sent, so
 * a window is taken as long as it could be (conservative for the assertion).
 */
export function maxInAnyWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((x, y) => x - y);
  let best = 0;
  let start = 0;
  for (let end = 0; end < sorted.length; end++) {
    while ((sorted[end] as number) - (sorted[start] as number) >= windowMs) start++;
    best = Math.max(best, end - start + 1);
  }
  return best;
}

export async function readyz(
  url: string,
): Promise<{ status: number; body: { conditions: Array<Record<string, string>> } }> {
  const res = await fetch(`${internalUrlOf(url)}/readyz`);
  return { status: res.status, body: (await res.json()) as { conditions: Array<Record<string, string>> } };
}

/** Polls check() every 100 ms until it is true; fails after timeoutMs. */
export async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}
