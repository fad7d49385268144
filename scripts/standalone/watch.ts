// The launcher's watch on the resource folder it was started with: any change (a file saved,
// added, removed) re-reads the whole folder after a short quiet period. A folder that does not
// parse is reported with the reason and nothing is applied (the last good resources keep serving);
// one that does is compared with the last applied set (diffResources) and handed to `apply`.
import { type FSWatcher, watch } from "node:fs";
import { type AnyResource, knowledgeIdOf } from "@capstan/shared/api";
import { readResources } from "@capstan/shared/resource-view";

export interface ResourceDiff {
  added: AnyResource[];
  changed: AnyResource[];
  removed: AnyResource[];
}

const idOf = (r: AnyResource) => `${r.kind}/${r.metadata.namespace ?? "default"}/${r.metadata.name}`;
const specOf = (r: AnyResource) => JSON.stringify((r as { spec?: unknown }).spec ?? null);

export function diffResources(before: AnyResource[], after: AnyResource[]): ResourceDiff {
  const old = new Map(before.map((r) => [idOf(r), r]));
  const now = new Map(after.map((r) => [idOf(r), r]));
  return {
    added: after.filter((r) => !old.has(idOf(r))),
    changed: after.filter((r) => old.has(idOf(r)) && specOf(old.get(idOf(r)) as AnyResource) !== specOf(r)),
    removed: before.filter((r) => !now.has(idOf(r))),
  };
}

export function isEmpty(d: ResourceDiff): boolean {
  return d.added.length + d.changed.length + d.removed.length === 0;
}

/** "2 changed (AccessChannel capstan-demo/website-chat, …), 1 added (…)". */
export function describeDiff(d: ResourceDiff): string {
  const part = (label: string, rs: AnyResource[]) =>
    rs.length === 0
      ? []
      : [
          `${rs.length} ${label} (${rs.map((r) => `${r.kind} ${r.metadata.namespace ?? "default"}/${r.metadata.name}`).join(", ")})`,
        ];
  return [...part("added", d.added), ...part("changed", d.changed), ...part("removed", d.removed)].join(", ");
}

/** Knowledge bases to (re-)ingest and to drop, by knowledge id. */
export function knowledgeChanges(d: ResourceDiff): { ingest: AnyResource[]; drop: string[] } {
  const kb = (rs: AnyResource[]) => rs.filter((r) => r.kind === "KnowledgeBase");
  const ingest = [...kb(d.added), ...kb(d.changed)];
  const kept = new Set(ingest.map((r) => knowledgeIdOf(r as never)));
  const drop = kb(d.removed)
    .map((r) => knowledgeIdOf(r as never))
    .filter((id) => !kept.has(id));
  return { ingest, drop };
}

export interface WatchOptions {
  dir: string;
  quietMs?: number;
  /** The folder parsed: what changed since the last applied set (never called with no change). */
  apply: (next: AnyResource[], diff: ResourceDiff) => Promise<void>;
  /** The folder did not parse; nothing was applied. */
  rejected: (err: Error) => void;
  /** `apply` failed part-way (a service did not answer); the next change tries again. */
  failed: (err: Error) => void;
  /** The folder parses again after a rejection, with nothing new to apply. */
  recovered?: () => void;
}

/** Watches opts.dir; `current` is what is applied now. Returns a function that stops watching. */
export function watchResources(current: AnyResource[], opts: WatchOptions): () => void {
  let applied = current;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let wasRejected = false;
  const check = () => {
    // One change at a time, in order: a save during an ingestion is applied after it.
    running = running.then(async () => {
      let next: AnyResource[];
      try {
        next = readResources([opts.dir]);
      } catch (err) {
        wasRejected = true;
        opts.rejected(err as Error);
        return;
      }
      const diff = diffResources(applied, next);
      if (isEmpty(diff) && wasRejected) opts.recovered?.();
      wasRejected = false;
      if (isEmpty(diff)) return;
      try {
        await opts.apply(next, diff);
        applied = next;
      } catch (err) {
        opts.failed(err as Error);
      }
    });
  };
  const watcher: FSWatcher = watch(opts.dir, () => {
    clearTimeout(timer);
    timer = setTimeout(check, opts.quietMs ?? 300);
  });
  return () => {
    clearTimeout(timer);
    watcher.close();
  };
}
