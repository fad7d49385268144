// Routing one chat call across an Agent's upstreams (spec.upstreams, or spec.provider as a list of
// one): the order (the declared one; with weights, the first attempt drawn by weight among the
// weighted upstreams, the others following in declared order), a circuit breaker per upstream
// (cockatiel: breakerFailures consecutive failed calls open it; after breakerOpenSeconds one trial
// call goes through; its success closes it; a single spec.provider has none, as before), and the fallback: a call that fails with a 429, a
// 5xx, a timeout or a connection error before the first byte goes to the next upstream, as does a
// call whose breaker is open (skipped at once, no request made). A 400 from a provider is the
// client's and is answered as is. A stream counts as started at its first event: until then a
// broken stream falls through too; after it, nothing is ever switched (the agent reports the error
// in the stream).
// Breakers live as long as the process and are keyed by agent, upstream and what the upstream is
// (URL, model, breaker settings): an Agent whose status changes keeps them; a changed upstream gets
// a fresh one. Their states are in metrics and in states() (the internal API's /upstreams).
import { type Agent, agentUpstreams, type UpstreamState } from "@capstan/shared/api";
import {
  BrokenCircuitError,
  type CircuitBreakerPolicy,
  CircuitState,
  ConsecutiveBreaker,
  circuitBreaker,
  handleWhen,
} from "cockatiel";
import { GatewayError } from "../errors.ts";
import type { GatewayMetrics } from "../metrics.ts";
import type { SecretResolver } from "../secrets.ts";
import type { UpstreamClient, UpstreamResponse } from "./upstream.ts";
import { type UpstreamTarget, upstreamTarget } from "./wire/index.ts";

/** Failures that say "this upstream is unwell": they count against its breaker. */
const UNWELL = new Set(["upstream_rate_limited", "upstream_error", "upstream_timeout"]);
/** At most this many breakers are kept (the oldest go first): bounded memory with many Agents. */
const MAX_BREAKERS = 10_000;

export type CircuitName = "closed" | "open" | "half_open";

export interface RouteUpstream {
  name: string;
  target: UpstreamTarget;
  keyRef: { name: string; key: string } | undefined;
  timeoutMs: number;
  maxRetries: number;
  weight: number | undefined;
  /** Breaker identity: what the upstream is. */
  id: string;
}

interface Route {
  agent: string;
  upstreams: RouteUpstream[];
  weighted: boolean;
  /** spec.provider: one upstream, no breaker (the behaviour before spec.upstreams). */
  single: boolean;
  failures: number;
  openMs: number;
}

/** One breaker as the internal API answers it (its wire schema is in @capstan/shared/api). */
export type { UpstreamState };

class UpstreamBreaker {
  readonly policy: CircuitBreakerPolicy;
  readonly agent: string;
  readonly upstream: RouteUpstream;
  circuit: CircuitName = "closed";
  since = Date.now();
  constructor(agent: string, upstream: RouteUpstream, route: Route, metrics: GatewayMetrics) {
    this.agent = agent;
    this.upstream = upstream;
    this.policy = circuitBreaker(
      handleWhen((err) => err instanceof GatewayError && UNWELL.has(err.code)),
      { halfOpenAfter: route.openMs, breaker: new ConsecutiveBreaker(route.failures) },
    );
    const labels = { agent: metrics.agentLabel.value(agent), upstream: upstream.name };
    metrics.upstreamCircuit.set({ ...labels, state: "closed" }, 1);
    this.policy.onStateChange((state) => {
      const next: CircuitName =
        state === CircuitState.Open || state === CircuitState.Isolated
          ? "open"
          : state === CircuitState.HalfOpen
            ? "half_open"
            : "closed";
      if (next === this.circuit) return;
      metrics.upstreamCircuit.set({ ...labels, state: this.circuit }, 0);
      metrics.upstreamCircuit.set({ ...labels, state: next }, 1);
      this.circuit = next;
      this.since = Date.now();
    });
  }
}

export interface RoutedResponse extends UpstreamResponse {
  /** The upstream that answered. */
  upstream: RouteUpstream;
}

export interface RouteCall {
  agent: Agent;
  namespace: string;
  /** The OpenAI chat body without `model` (each upstream sets its own). */
  body: Record<string, unknown>;
  stream: boolean;
  signal: AbortSignal;
}

export interface RouterDeps {
  upstream: UpstreamClient;
  secrets: SecretResolver;
  metrics: GatewayMetrics;
  /** Draws in [0, 1) for the weighted choice (tests). */
  random?: () => number;
}

function routeOf(agent: Agent): Route {
  const id = `${agent.metadata.namespace ?? "default"}/${agent.metadata.name}`;
  const upstreams = agentUpstreams(agent.spec).map((u) => ({
    name: u.name,
    target: upstreamTarget(u),
    keyRef: u.apiKeySecretRef,
    timeoutMs: u.timeoutSeconds * 1000,
    maxRetries: u.maxRetries,
    weight: u.weight,
    id: `${id}/${u.name} ${u.kind} ${u.baseURL} ${u.model} ${u.deployment ?? ""}`,
  }));
  const r = agent.spec.routing;
  return {
    agent: id,
    upstreams,
    weighted: upstreams.some((u) => u.weight !== undefined),
    single: !agent.spec.upstreams,
    failures: r?.breakerFailures ?? 5,
    openMs: (r?.breakerOpenSeconds ?? 30) * 1000,
  };
}

/** The order to try: declared, or with weights the drawn one first and the rest as declared. */
export function attemptOrder(route: Pick<Route, "upstreams" | "weighted">, draw: number): RouteUpstream[] {
  if (!route.weighted) return route.upstreams;
  const total = route.upstreams.reduce((n, u) => n + (u.weight ?? 0), 0);
  if (total <= 0) return route.upstreams;
  let point = draw * total;
  const first = route.upstreams.find((u) => {
    point -= u.weight ?? 0;
    return (u.weight ?? 0) > 0 && point < 0;
  });
  if (!first) return route.upstreams;
  return [first, ...route.upstreams.filter((u) => u !== first)];
}

/** An event stream with its first event already read back in front. */
async function* prepend(first: string, rest: AsyncGenerator<string>): AsyncGenerator<string> {
  try {
    yield first;
    yield* rest;
  } finally {
    await rest.return(undefined);
  }
}

export class UpstreamRouter {
  private readonly deps: RouterDeps;
  private readonly routes = new WeakMap<Agent, Route>();
  private readonly breakers = new Map<string, UpstreamBreaker>();

  constructor(deps: RouterDeps) {
    this.deps = deps;
  }

  private route(agent: Agent): Route {
    let r = this.routes.get(agent);
    if (!r) {
      r = routeOf(agent);
      this.routes.set(agent, r);
    }
    return r;
  }

  private breaker(route: Route, up: RouteUpstream): UpstreamBreaker {
    const key = `${up.id} ${route.failures} ${route.openMs}`;
    let b = this.breakers.get(key);
    if (!b) {
      if (this.breakers.size >= MAX_BREAKERS) this.breakers.delete(this.breakers.keys().next().value as string);
      b = new UpstreamBreaker(route.agent, up, route, this.deps.metrics);
      this.breakers.set(key, b);
    }
    return b;
  }

  /** Every breaker this replica holds, for the internal API. */
  states(): UpstreamState[] {
    return [...this.breakers.values()].map((b) => ({
      agent: b.agent,
      upstream: b.upstream.name,
      model: b.upstream.target.model,
      circuit: b.circuit,
      since: new Date(b.since).toISOString(),
    }));
  }

  /** The first upstream that answers, in attempt order; the last failure when none does. */
  async call(call: RouteCall): Promise<RoutedResponse> {
    const route = this.route(call.agent);
    const { metrics } = this.deps;
    const order = attemptOrder(route, route.weighted ? (this.deps.random ?? Math.random)() : 0);
    let last: unknown;
    for (const up of order) {
      try {
        // A single spec.provider has no breaker and nothing to fall to: it behaves as it always did.
        const res = route.single
          ? await this.attempt(call, route, up)
          : await this.breaker(route, up).policy.execute(() => this.attempt(call, route, up));
        metrics.upstreamServed.inc({ agent: metrics.agentLabel.value(route.agent), upstream: up.name });
        return { ...res, upstream: up };
      } catch (err) {
        if (!(err instanceof GatewayError || err instanceof BrokenCircuitError) || call.signal.aborted) throw err;
        if (err instanceof GatewayError && err.code === "upstream_bad_request") throw err;
        const reason = err instanceof GatewayError ? err.code : "circuit_open";
        metrics.upstreamFallbacks.inc({ agent: metrics.agentLabel.value(route.agent), upstream: up.name, reason });
        if (err instanceof GatewayError || last === undefined) last = err;
      }
    }
    if (last instanceof BrokenCircuitError) {
      throw new GatewayError("upstreams_unavailable", { seconds: Math.ceil(route.openMs / 1000) });
    }
    throw last;
  }

  /** One upstream's call (its retries included), a stream up to its first event. */
  private async attempt(call: RouteCall, route: Route, up: RouteUpstream): Promise<UpstreamResponse> {
    let apiKey: string | undefined;
    if (up.keyRef) {
      apiKey = await this.deps.secrets.resolve(call.namespace, up.keyRef);
      if (apiKey === undefined) throw new GatewayError("provider_key_missing");
    }
    const res = await this.deps.upstream.call({
      target: up.target,
      apiKey,
      body: { model: up.target.model, ...call.body },
      stream: call.stream,
      timeoutMs: up.timeoutMs,
      maxRetries: up.maxRetries,
      signal: call.signal,
      agent: route.agent,
    });
    if (!res.events) return res;
    const first = await res.events.next();
    if (first.done) throw new GatewayError("upstream_error", { detail: "the stream ended before its first event" });
    return { ...res, events: prepend(first.value, res.events) };
  }
}
