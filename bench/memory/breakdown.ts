// Where a process's resident memory is, read from outside it: /proc/<pid>/smaps summed by mapping
// (the node binary's pages, other files such as shared libraries and the model, anonymous memory:
// V8's heap, malloc's arenas, thread stacks), and the V8 heap figures its /metrics page reports
// (prom-client's nodejs_* gauges), so a figure can be told apart as code, heap or native memory.
import { readFileSync } from "node:fs";

export interface Breakdown {
  /** Resident KiB by mapping: "node" (the binary), "files" (other files), "anon" (no file). */
  rssKiB: { node: number; files: number; anon: number };
  /** The process's threads (an embedding worker is one, with onnxruntime's threads besides). */
  threads?: number;
  /** V8's heap from the process's own metrics, MiB (undefined when it serves none). */
  heap?: { total: number; used: number; newSpace: number; external: number };
}

/** Resident KiB per kind of mapping, from smaps. */
export function mappings(pid: number): Breakdown["rssKiB"] {
  const out = { node: 0, files: 0, anon: 0 };
  let kind: keyof typeof out = "anon";
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    // A mapping's header: "start-end perms offset dev inode [path]".
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (head) {
      const [inode, path] = [head[1], head[2] ?? ""];
      kind = inode !== "0" && path.startsWith("/") ? (/\/node$/.test(path) ? "node" : "files") : "anon";
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) out[kind] += Number(rss[1]);
  }
  return out;
}

/** The number of threads of a process. */
export function threadsOf(pid: number): number {
  return Number(/^Threads:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
}

/** V8's heap as the process's Prometheus page reports it, MiB. */
export async function heapOf(metricsUrl: string): Promise<Breakdown["heap"]> {
  const res = await fetch(metricsUrl).catch(() => undefined);
  if (!res?.ok) return undefined;
  const text = await res.text();
  const gauge = (re: RegExp) => Number(re.exec(text)?.[1] ?? Number.NaN) / 2 ** 20;
  return {
    total: gauge(/^nodejs_heap_size_total_bytes (\S+)/m),
    used: gauge(/^nodejs_heap_size_used_bytes (\S+)/m),
    newSpace: gauge(/^nodejs_heap_space_size_total_bytes\{space="new"\} (\S+)/m),
    external: gauge(/^nodejs_external_memory_bytes (\S+)/m),
  };
}

/** One line: "binary 40.1, files 20.3, anon 150.2 MiB; heap 60.2 of which new 16.0, used 40.3, external 3.1 MiB". */
export function describe(b: Breakdown): string {
  const m = (kib: number) => (kib / 1024).toFixed(1);
  const f = (mib: number) => mib.toFixed(1);
  const heap = b.heap
    ? `; V8 heap ${f(b.heap.total)} (new space ${f(b.heap.newSpace)}, used ${f(b.heap.used)}), external ${f(b.heap.external)} MiB`
    : "";
  const threads = b.threads ? `; ${b.threads} threads` : "";
  return `node binary ${m(b.rssKiB.node)}, other files ${m(b.rssKiB.files)}, anonymous ${m(b.rssKiB.anon)} MiB${heap}${threads}`;
}
