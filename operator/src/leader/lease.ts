// Leader election on a coordination.k8s.io Lease, as client-go's leaderelection: a candidate
// acquires the Lease when it is free or its holder has not renewed it for leaseDuration (measured
// on the local clock from when this candidate last saw the record change, so clock skew between
// nodes does not matter); the leader renews every retryPeriod and gives up leadership when it
// could not renew for renewDeadline; on stop the leader releases the Lease so a standby takes over
// at once. Writes use the Lease's resourceVersion, so two candidates never both win. The Lease is
// read, created and replaced with client-node's CoordinationV1Api over the pooled transport, each
// call bounded by the renew deadline.
import type { Logger } from "@capstan/shared";
import { Gauge, type Registry } from "@capstan/shared";
import { conciseError, isStatus } from "@capstan/shared/kube";
import { CoordinationV1Api, type V1Lease, type V1LeaseSpec, V1MicroTime } from "@kubernetes/client-node";
import type { ObjectClient } from "../kube/client.ts";

export interface LeaderElectionOptions {
  client: ObjectClient;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  logger?: Logger;
  registry?: Registry;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
}

/**
 * What a candidate compares between reads to see whether the holder renewed. client-node leaves
 * the MicroTime fields as the API server's strings when it reads a Lease; the ones written here
 * are V1MicroTime, whose ISO form is the same string.
 */
function recordOf(spec: V1LeaseSpec): string {
  const time = (t: Date | string | undefined) => (t instanceof Date ? t.toISOString() : (t ?? ""));
  return JSON.stringify([
    spec.holderIdentity ?? "",
    spec.leaseDurationSeconds ?? 0,
    time(spec.acquireTime),
    time(spec.renewTime),
    spec.leaseTransitions ?? 0,
  ]);
}

/** The Lease as written back: managedFields left out (the server keeps its own). */
function withSpec(lease: V1Lease, spec: V1LeaseSpec): V1Lease {
  return { ...lease, metadata: { ...lease.metadata, managedFields: undefined }, spec };
}

const JITTER = 1.2;

export class LeaderElector {
  private readonly o: LeaderElectionOptions;
  private observed: { record: string; at: number } | undefined;
  private leading = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;
  private lastRenew = 0;
  private readonly gauge: Gauge<"name"> | undefined;
  private loop: Promise<void> | undefined;
  private readonly leases: CoordinationV1Api;

  constructor(o: LeaderElectionOptions) {
    this.o = o;
    this.leases = o.client.http.api(CoordinationV1Api);
    this.gauge = o.registry
      ? new Gauge({
          name: "leader_election_master_status",
          help: "1 when this instance leads the Lease, 0 while it stands by",
          labelNames: ["name"] as const,
          registers: [o.registry],
        })
      : undefined;
    // Every candidate exports the gauge from the start: a standby's 0 is what lets an alert see
    // that no replica leads (a leader that loses the Lease exits, and its series goes with it).
    this.gauge?.set({ name: o.name }, 0);
  }

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    this.loop = this.run();
  }

  /** Stops campaigning; a leader releases the Lease (holderIdentity cleared) first. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.wake?.();
    await this.loop;
    if (this.leading) {
      this.setLeading(false);
      await this.release().catch((err: Error) => this.o.logger?.warn({ err: err.message }, "lease release failed"));
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.timer = setTimeout(resolve, ms);
      this.wake = resolve;
    });
  }

  private setLeading(v: boolean): void {
    if (this.leading === v) return;
    this.leading = v;
    this.gauge?.set({ name: this.o.name }, v ? 1 : 0);
    this.o.logger?.info(
      { lease: `${this.o.namespace}/${this.o.name}`, identity: this.o.identity },
      v ? "became leader" : "stopped leading",
    );
    if (v) this.o.onStartedLeading();
    else this.o.onStoppedLeading();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let ok = false;
      try {
        ok = await this.tryAcquireOrRenew();
      } catch (err) {
        this.o.logger?.warn({ err: (err as Error).message }, "lease acquire/renew failed");
      }
      if (this.stopped) return;
      const now = Date.now();
      if (ok) {
        this.lastRenew = now;
        this.setLeading(true);
      } else if (this.leading && now - this.lastRenew >= this.o.renewDeadlineMs) {
        this.o.logger?.error({ lease: this.o.name }, "could not renew the lease within the renew deadline");
        this.setLeading(false);
      }
      const wait = this.leading ? this.o.retryPeriodMs : this.o.retryPeriodMs * (1 + Math.random() * (JITTER - 1));
      await this.sleep(wait);
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = new V1MicroTime();
    const call = this.o.client.http.options({ timeoutMs: this.o.renewDeadlineMs });
    const ref = { name: this.o.name, namespace: this.o.namespace };
    const mine: V1LeaseSpec = {
      holderIdentity: this.o.identity,
      leaseDurationSeconds: Math.round(this.o.leaseDurationMs / 1000),
      acquireTime: now,
      renewTime: now,
      leaseTransitions: 0,
    };
    let lease: V1Lease;
    try {
      lease = await this.leases.readNamespacedLease(ref, call);
    } catch (err) {
      if (!isStatus(err, 404)) throw conciseError(err);
      try {
        await this.leases.createNamespacedLease(
          {
            namespace: this.o.namespace,
            body: { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: ref, spec: mine },
          },
          call,
        );
      } catch (err) {
        if (isStatus(err, 409)) return false; // another candidate created it first
        throw conciseError(err);
      }
      this.observed = { record: recordOf(mine), at: Date.now() };
      return true;
    }
    const spec = lease.spec ?? {};
    const record = recordOf(spec);
    if (!this.observed || this.observed.record !== record) this.observed = { record, at: Date.now() };
    const holder = spec.holderIdentity ?? "";
    const durationMs = (spec.leaseDurationSeconds ?? 0) * 1000;
    if (holder && holder !== this.o.identity && this.observed.at + durationMs > Date.now()) return false;
    const next: V1LeaseSpec =
      holder === this.o.identity
        ? { ...spec, renewTime: now, leaseDurationSeconds: mine.leaseDurationSeconds }
        : { ...mine, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 };
    try {
      await this.leases.replaceNamespacedLease({ ...ref, body: withSpec(lease, next) }, call);
    } catch (err) {
      if (isStatus(err, 409)) return false; // someone else wrote first
      throw conciseError(err);
    }
    this.observed = { record: recordOf(next), at: Date.now() };
    return true;
  }

  private async release(): Promise<void> {
    const call = this.o.client.http.options({ timeoutMs: 5000 });
    const ref = { name: this.o.name, namespace: this.o.namespace };
    try {
      const lease = await this.leases.readNamespacedLease(ref, call);
      if (lease.spec?.holderIdentity !== this.o.identity) return;
      const now = new V1MicroTime();
      const spec = { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1, renewTime: now, acquireTime: now };
      await this.leases.replaceNamespacedLease({ ...ref, body: withSpec(lease, spec) }, call);
    } catch (err) {
      throw conciseError(err);
    }
  }
}
