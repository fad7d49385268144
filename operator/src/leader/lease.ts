// Leader election on a coordination.k8s.io Lease, as client-go's leaderelection: a candidate
// acquires the Lease when it is free or its holder has not renewed it for leaseDuration (measured
// on the local clock from when this candidate last saw the record change, so clock skew between
// nodes does not matter); the leader renews every retryPeriod and gives up leadership when it
// could not renew for renewDeadline; on stop the leader releases the Lease so a standby takes over
// at once. Writes use the Lease's resourceVersion, so two candidates never both win.
import type { Logger } from "@capstan/shared";
import { Gauge, type Registry } from "@capstan/shared";
import { isStatus, type KubeObject, LEASE, resourcePath } from "@capstan/shared/kube";
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

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

type Lease = KubeObject & { spec?: LeaseSpec };

function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
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

  constructor(o: LeaderElectionOptions) {
    this.o = o;
    this.gauge = o.registry
      ? new Gauge({
          name: "leader_election_master_status",
          help: "1 when this instance leads the Lease",
          labelNames: ["name"] as const,
          registers: [o.registry],
        })
      : undefined;
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

  private path(name?: string): string {
    return resourcePath(LEASE, this.o.namespace, name);
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = new Date();
    const http = this.o.client.http;
    const mine: LeaseSpec = {
      holderIdentity: this.o.identity,
      leaseDurationSeconds: Math.round(this.o.leaseDurationMs / 1000),
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    };
    let lease: Lease;
    try {
      lease = await http.json<Lease>(this.path(this.o.name), { timeoutMs: this.o.renewDeadlineMs });
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
      await http.json(this.path(), {
        method: "POST",
        body: {
          apiVersion: LEASE.apiVersion,
          kind: LEASE.kind,
          metadata: { name: this.o.name, namespace: this.o.namespace },
          spec: mine,
        },
        timeoutMs: this.o.renewDeadlineMs,
      });
      this.observed = { record: JSON.stringify(mine), at: Date.now() };
      return true;
    }
    const spec = lease.spec ?? {};
    const record = JSON.stringify(spec);
    if (!this.observed || this.observed.record !== record) this.observed = { record, at: Date.now() };
    const holder = spec.holderIdentity ?? "";
    const durationMs = (spec.leaseDurationSeconds ?? 0) * 1000;
    if (holder && holder !== this.o.identity && this.observed.at + durationMs > Date.now()) return false;
    const next: LeaseSpec =
      holder === this.o.identity
        ? { ...spec, renewTime: mine.renewTime, leaseDurationSeconds: mine.leaseDurationSeconds }
        : { ...mine, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 };
    try {
      await http.json(this.path(this.o.name), {
        method: "PUT",
        body: { ...lease, spec: next, metadata: { ...lease.metadata, managedFields: undefined } },
        timeoutMs: this.o.renewDeadlineMs,
      });
    } catch (err) {
      if (isStatus(err, 409)) return false; // someone else wrote first
      throw err;
    }
    this.observed = { record: JSON.stringify(next), at: Date.now() };
    return true;
  }

  private async release(): Promise<void> {
    const http = this.o.client.http;
    const lease = await http.json<Lease>(this.path(this.o.name), { timeoutMs: 5000 });
    if (lease.spec?.holderIdentity !== this.o.identity) return;
    const now = microTime(new Date());
    await http.json(this.path(this.o.name), {
      method: "PUT",
      body: {
        ...lease,
        metadata: { ...lease.metadata, managedFields: undefined },
        spec: { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1, renewTime: now, acquireTime: now },
      },
      timeoutMs: 5000,
    });
  }
}
