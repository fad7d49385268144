// A light, bounded load for the upgrade test (test/e2e/upgrade.test.ts): one request every
// `everyMs`, taking turns among the given requests, each on its own, so a slow answer delays no
// other. It stops when told or after `maxMs` by itself, and counts every outcome: a status other
// than 200 and an error (refused or reset connection, timeout) are failures.

export interface LoadRequest {
  name: string;
  /** Sends one request and resolves to its HTTP status and body. */
  send: () => Promise<{ status: number; body: string }>;
}

export interface LoadFailure {
  name: string;
  /** Milliseconds since the load started. */
  at: number;
  /** The status and the start of the body, or the error's message. */
  what: string;
}

export interface LoadResult {
  sent: number;
  ok: Record<string, number>;
  failures: LoadFailure[];
  durationMs: number;
}

export interface SteadyLoad {
  /** Stops sending and resolves once every request in flight has its answer. */
  stop: () => Promise<LoadResult>;
}

export function steadyLoad(requests: LoadRequest[], o: { everyMs: number; maxMs: number }): SteadyLoad {
  const started = Date.now();
  const ok: Record<string, number> = Object.fromEntries(requests.map((r) => [r.name, 0]));
  const failures: LoadFailure[] = [];
  const inFlight = new Set<Promise<void>>();
  let sent = 0;
  const fire = () => {
    const r = requests[sent % requests.length] as LoadRequest;
    sent++;
    const p = r
      .send()
      .then(
        ({ status, body }) => {
          if (status === 200) ok[r.name] = (ok[r.name] ?? 0) + 1;
          else failures.push({ name: r.name, at: Date.now() - started, what: `HTTP ${status} ${body.slice(0, 160)}` });
        },
        (err: unknown) => {
          failures.push({ name: r.name, at: Date.now() - started, what: String(err) });
        },
      )
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  };
  const timer = setInterval(() => {
    if (Date.now() - started > o.maxMs) clearInterval(timer);
    else fire();
  }, o.everyMs);
  return {
    stop: async () => {
      clearInterval(timer);
      while (inFlight.size > 0) await Promise.all([...inFlight]);
      return { sent, ok, failures, durationMs: Date.now() - started };
    },
  };
}
