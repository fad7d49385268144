// Processes and their memory from /proc, for benchmarks that measure a process with the children
// it starts (the scraper's Chromium): the tree below a process, and the summed PSS (proportional
// set size, so pages shared between the processes count once) of a list of processes.
import { readdirSync, readFileSync } from "node:fs";

/** `root` and every descendant of it, from /proc. */
export function processTree(root: number = process.pid): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // process gone
    }
  }
  const tree: number[] = [];
  const stack = [root];
  while (stack.length) {
    const pid = stack.pop() as number;
    tree.push(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return tree;
}

/** The summed PSS of `pids` in MiB (a process gone meanwhile counts 0). */
export function pssMiB(pids: number[]): number {
  let kib = 0;
  for (const pid of pids) {
    try {
      const m = /^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"));
      kib += Number(m?.[1] ?? 0);
    } catch {
      // process gone
    }
  }
  return kib / 1024;
}
