// A controller as controller-runtime runs one: event sources map objects to request keys on a
// rate-limited work queue; a bounded number of workers call the reconciler; an error re-queues
// the key with per-key exponential backoff, a result with requeueAfter re-queues it after that
// delay, success forgets its failures. A key is never reconciled by two workers at once.
// Each reconcile is the root span of a trace of its own ("reconcile <Kind>"), naming the object
// it reconciles; the API server calls and the calls to search and the scraper are its children.
import type { Logger } from "@capstan/shared";
import { controllerOf, type KubeObject, objectKey } from "@capstan/shared/kube";
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { Informer } from "../kube/informer.ts";
import { type QueueMetrics, WorkQueue } from "../workqueue/queue.ts";
import { defaultControllerRateLimiter, type RateLimiter } from "../workqueue/rate-limiter.ts";
import type { ControllerMetrics } from "./metrics.ts";

export interface Request {
  namespace: string;
  name: string;
}

export interface Result {
  /** Reconcile again after this many milliseconds (e.g. at a key's expiry). */
  requeueAfterMs?: number;
  /** Reconcile again with backoff, without counting an error. */
  requeue?: boolean;
}

export type Reconcile = (req: Request) => Promise<Result | undefined>;

export interface ControllerOptions {
  name: string;
  /** The kind reconciled, named on each reconcile's span (default: the controller's name). */
  kind?: string;
  reconcile: Reconcile;
  maxConcurrentReconciles?: number;
  rateLimiter?: RateLimiter;
  metrics?: { controller: ControllerMetrics; queue: QueueMetrics };
  logger?: Logger;
}

/** Longest single delay a timer takes (setTimeout overflows past 2^31-1 ms). */
const MAX_DELAY_MS = 2 ** 31 - 1;

export class Controller {
  readonly name: string;
  readonly kind: string;
  readonly queue: WorkQueue;
  private readonly reconcile: Reconcile;
  private readonly workers: number;
  private readonly metrics: ControllerOptions["metrics"];
  private readonly logger: Logger | undefined;
  private running: Promise<void>[] = [];
  private started = false;
  /** Reconciles run so far, for tests. */
  reconciles = 0;

  constructor(opts: ControllerOptions) {
    this.name = opts.name;
    this.kind = opts.kind ?? opts.name;
    this.reconcile = opts.reconcile;
    this.workers = opts.maxConcurrentReconciles ?? 1;
    this.metrics = opts.metrics;
    this.logger = opts.logger;
    this.queue = new WorkQueue({
      name: opts.name,
      rateLimiter: opts.rateLimiter ?? defaultControllerRateLimiter(),
      ...(opts.metrics ? { metrics: opts.metrics.queue } : {}),
    });
  }

  enqueue(key: string): void {
    this.queue.add(key);
  }

  /** For(): every event of the primary kind enqueues that object. */
  watchFor<T extends KubeObject>(informer: Informer<T>): void {
    informer.addHandler({
      add: (o) => this.enqueue(objectKey(o)),
      update: (_old, o) => this.enqueue(objectKey(o)),
      delete: (o) => this.enqueue(objectKey(o)),
    });
  }

  /** Owns(): events of objects this kind controls enqueue their controller owner. */
  watchOwned<T extends KubeObject>(informer: Informer<T>, ownerKind: string): void {
    const owner = (o: T) => {
      const ref = controllerOf(o);
      if (ref && ref.kind === ownerKind) this.enqueue(`${o.metadata.namespace ?? ""}/${ref.name}`);
    };
    informer.addHandler({ add: owner, update: (_old, o) => owner(o), delete: owner });
  }

  /** Watches() with a map function: events of another kind enqueue the keys it returns. */
  watchMapped<T extends KubeObject>(informer: Informer<T>, map: (obj: T) => string[]): void {
    const fire = (o: T) => {
      for (const key of map(o)) this.enqueue(key);
    };
    informer.addHandler({
      add: fire,
      update: (old, o) => {
        fire(o);
        if (old !== o) for (const key of map(old)) this.enqueue(key);
      },
      delete: fire,
    });
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.metrics?.controller.maxConcurrent.set({ controller: this.name }, this.workers);
    // As controller-runtime does: the error counter exists at 0, so error-ratio alerts have a series.
    this.metrics?.controller.errors.inc({ controller: this.name }, 0);
    this.running = Array.from({ length: this.workers }, () => this.worker());
  }

  /** Stops taking work and waits for in-flight reconciles to finish. */
  async stop(): Promise<void> {
    this.queue.shutDown();
    await Promise.all(this.running);
  }

  private async worker(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      try {
        await this.process(key);
      } finally {
        this.queue.done(key);
      }
    }
  }

  private async process(key: string): Promise<void> {
    const labels = { controller: this.name };
    const i = key.indexOf("/");
    const req = { namespace: key.slice(0, i), name: key.slice(i + 1) };
    this.metrics?.controller.activeWorkers.inc(labels);
    const end = this.metrics?.controller.time.startTimer(labels);
    this.reconciles += 1;
    const span = trace.getTracer("capstan-operator").startSpan(
      `reconcile ${this.kind}`,
      {
        kind: SpanKind.INTERNAL,
        root: true,
        attributes: {
          "capstan.controller": this.name,
          "capstan.resource.kind": this.kind,
          "capstan.resource.name": req.name,
          "k8s.namespace.name": req.namespace,
          "capstan.reconcile.retries": this.queue.numRequeues(key),
        },
      },
      ROOT_CONTEXT,
    );
    try {
      const result = await context.with(trace.setSpan(ROOT_CONTEXT, span), () => this.reconcile(req));
      span.setAttribute(
        "capstan.reconcile.result",
        result?.requeueAfterMs ? "requeue_after" : result?.requeue ? "requeue" : "success",
      );
      if (result?.requeueAfterMs !== undefined && result.requeueAfterMs > 0) {
        this.queue.forget(key);
        this.queue.addAfter(key, Math.min(result.requeueAfterMs, MAX_DELAY_MS));
        this.metrics?.controller.total.inc({ ...labels, result: "requeue_after" });
      } else if (result?.requeue) {
        this.queue.addRateLimited(key);
        this.metrics?.controller.total.inc({ ...labels, result: "requeue" });
      } else {
        this.queue.forget(key);
        this.metrics?.controller.total.inc({ ...labels, result: "success" });
      }
    } catch (err) {
      this.queue.addRateLimited(key);
      this.metrics?.controller.total.inc({ ...labels, result: "error" });
      this.metrics?.controller.errors.inc(labels);
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      this.logger?.warn(
        { controller: this.name, key, err: (err as Error).message, retries: this.queue.numRequeues(key) },
        "reconcile failed; requeued with backoff",
      );
    } finally {
      span.end();
      end?.();
      this.metrics?.controller.activeWorkers.dec(labels);
    }
  }
}
