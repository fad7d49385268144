// Feeds a ResourceView from a folder of YAML files (standalone mode): the same YAML a platform
// team applies, with status filled in by the standalone launcher. Reloads when files change; a
// file that fails to parse is reported and the last good state is kept.
import { type FSWatcher, readdirSync, readFileSync, watch } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { KIND_NAMES } from "../api/kinds.ts";
import { type AnyResource, parseResource } from "../api/resources.ts";
import type { ResourceView } from "./view.ts";

export interface FileSourceOptions {
  dirs: string[];
  onError?: (err: Error) => void;
  /** Re-read when a file changes (default true). */
  watch?: boolean;
}

/** Reads every *.yaml / *.yml / *.json file of the folders, in name order. */
export function readResources(dirs: string[]): AnyResource[] {
  const out: AnyResource[] = [];
  for (const dir of dirs) {
    const files = readdirSync(dir)
      .filter((f) => /\.(ya?ml|json)$/.test(f))
      .sort();
    for (const file of files) {
      const path = join(dir, file);
      for (const doc of parseAllDocuments(readFileSync(path, "utf8"))) {
        if (doc.errors.length > 0) throw new Error(`${path}: ${doc.errors[0]?.message}`);
        const raw = doc.toJS() as { apiVersion?: string } | null;
        if (!raw || !String(raw.apiVersion ?? "").startsWith("capstan.dev/")) continue;
        try {
          out.push(parseResource(raw));
        } catch (err) {
          throw new Error(`${path}: ${(err as Error).message}`);
        }
      }
    }
  }
  return out;
}

export class FileSource {
  private watchers: FSWatcher[] = [];
  private timer: NodeJS.Timeout | undefined;

  private readonly view: ResourceView;
  private readonly opts: FileSourceOptions;

  constructor(view: ResourceView, opts: FileSourceOptions) {
    this.view = view;
    this.opts = opts;
  }

  /** Loads once (throws on a bad file), then watches for changes. */
  start(): void {
    this.load();
    if (this.opts.watch === false) return;
    for (const dir of this.opts.dirs) {
      this.watchers.push(
        watch(dir, () => {
          clearTimeout(this.timer);
          this.timer = setTimeout(() => this.reload(), 100);
        }),
      );
    }
  }

  stop(): void {
    clearTimeout(this.timer);
    for (const w of this.watchers) w.close();
    this.watchers = [];
  }

  private load(): void {
    const resources = readResources(this.opts.dirs);
    for (const kind of KIND_NAMES) {
      this.view.replace(
        kind,
        resources.filter((r) => r.kind === kind),
      );
    }
  }

  private reload(): void {
    try {
      this.load();
    } catch (err) {
      this.opts.onError?.(err as Error);
    }
  }
}
