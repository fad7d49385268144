// Events (events.k8s.io/v1) for notable transitions: key issued, expired, rotated, workload
// applied, ingestion finished. Best effort: a failed event never fails a reconcile. Repeats of the
// same event for the same object within a short window are dropped, as client-go's correlator does;
// at most a few are sent at once and a burst beyond the backlog is dropped (client-go's broadcaster
// drops too), so 10,000 new objects do not mean 10,000 requests in flight. Sent with client-node's
// EventsV1Api over the pooled transport.
import type { Logger } from "@capstan/shared";
import type { KubeObject } from "@capstan/shared/kube";
import { EventsV1Api, type EventsV1Event, V1MicroTime } from "@kubernetes/client-node";
import type { ObjectClient } from "./client.ts";

export type EventType = "Normal" | "Warning";

const MAX_IN_FLIGHT = 4;
const MAX_BACKLOG = 1000;

export class EventRecorder {
  private readonly client: ObjectClient;
  private readonly controller: string;
  private readonly instance: string;
  private readonly logger: Logger | undefined;
  private readonly recent = new Map<string, number>();
  private readonly events: EventsV1Api;
  private readonly backlog: { ns: string; body: EventsV1Event }[] = [];
  private inFlight = 0;
  /** Events dropped because the backlog was full (best effort: bursts must not cost memory). */
  dropped = 0;

  constructor(client: ObjectClient, opts: { controller: string; instance: string; logger?: Logger }) {
    this.client = client;
    this.events = client.http.api(EventsV1Api);
    this.controller = opts.controller;
    this.instance = opts.instance;
    this.logger = opts.logger;
  }

  record(obj: KubeObject, type: EventType, reason: string, action: string, note: string): void {
    const ns = obj.metadata.namespace ?? "default";
    const dedupe = `${obj.metadata.uid}/${reason}/${note}`;
    const now = Date.now();
    const last = this.recent.get(dedupe);
    if (last && now - last < 10 * 60_000) return;
    this.recent.set(dedupe, now);
    if (this.recent.size > 10_000) this.recent.clear();
    const event: EventsV1Event = {
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      // An explicit name as client-go gives (<object>.<hex time>): kube-apiserver 1.35 rejects a
      // generateName ending in "." (not a DNS subdomain), which dropped every Event.
      metadata: {
        name: `${obj.metadata.name}.${(now * 1000 + Math.floor(Math.random() * 1000)).toString(16)}`,
        namespace: ns,
      },
      // A MicroTime: client-node's V1MicroTime writes the six fractional digits the API server requires.
      eventTime: new V1MicroTime(now),
      reportingController: this.controller,
      reportingInstance: this.instance,
      action,
      reason,
      note: note.slice(0, 1024),
      type,
      regarding: {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name: obj.metadata.name,
        namespace: ns,
        uid: obj.metadata.uid,
        resourceVersion: obj.metadata.resourceVersion,
      },
    };
    if (this.backlog.length >= MAX_BACKLOG) {
      this.dropped += 1;
      return;
    }
    this.backlog.push({ ns, body: event });
    this.pump();
  }

  private pump(): void {
    while (this.inFlight < MAX_IN_FLIGHT && this.backlog.length > 0) {
      const next = this.backlog.shift() as { ns: string; body: EventsV1Event };
      this.inFlight += 1;
      this.events
        .createNamespacedEvent({ namespace: next.ns, body: next.body }, this.client.http.options({ timeoutMs: 10_000 }))
        .catch((err: Error) => this.logger?.debug({ err: err.message }, "event not recorded"))
        .finally(() => {
          this.inFlight -= 1;
          this.pump();
        });
    }
  }
}
