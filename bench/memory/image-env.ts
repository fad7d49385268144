// How a tree's Dockerfile runs a process: the ENV of its target stage and of the stages it is
// built FROM, and the node flags of its CMD, so the memory benchmark runs each bundle as its image
// does without a copy of those settings that could drift. A preloaded library (LD_PRELOAD, the
// images' jemalloc) is looked up on this machine by its file name, since the image's path is the
// image's; a missing one stops the benchmark (scripts/setup.d/25-jemalloc.sh installs it).
import { existsSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";

export interface ImageRun {
  env: Record<string, string>;
  /** The node flags of the CMD, before the entry point (e.g. --expose-gc). */
  flags: string[];
}

interface Stage {
  from: string;
  env: Record<string, string>;
  cmd?: string[];
}

/** The Dockerfile's stages by name, with continuation lines joined. */
function stages(dockerfile: string): Map<string, Stage> {
  const out = new Map<string, Stage>();
  let current: Stage | undefined;
  const lines = dockerfile.replace(/\\\n/g, " ").split("\n");
  for (const raw of lines) {
    const line = raw.trim();
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/i.exec(line);
    if (from) {
      current = { from: from[1] as string, env: {} };
      if (from[2]) out.set(from[2], current);
      continue;
    }
    if (!current) continue;
    if (/^ENV\s/i.test(line)) {
      for (const m of line.slice(4).matchAll(/(\w+)=("[^"]*"|\S+)/g)) {
        current.env[m[1] as string] = (m[2] as string).replace(/^"|"$/g, "");
      }
    }
    const cmd = /^CMD\s+(\[.*\])/i.exec(line);
    if (cmd) current.cmd = JSON.parse(cmd[1] as string) as string[];
  }
  return out;
}

/** The environment and node flags `target`'s image runs its process with, or undefined without a Dockerfile. */
export function imageRun(root: string, target: string): ImageRun | undefined {
  const file = join(root, "Dockerfile");
  if (!existsSync(file)) return undefined;
  const all = stages(readFileSync(file, "utf8"));
  const chain: Stage[] = [];
  for (let s = all.get(target); s; s = all.get(s.from)) chain.unshift(s);
  if (chain.length === 0) throw new Error(`no stage ${target} in ${file}`);
  const env: Record<string, string> = {};
  for (const s of chain) Object.assign(env, s.env);
  // Only what changes how the process runs: not PATH, HOME or the model folder of the image.
  const kept: Record<string, string> = {};
  for (const key of ["NODE_OPTIONS", "MALLOC_ARENA_MAX", "MALLOC_CONF", "LD_PRELOAD"]) {
    if (env[key] !== undefined) kept[key] = env[key] as string;
  }
  if (kept.LD_PRELOAD) kept.LD_PRELOAD = hostLibrary(kept.LD_PRELOAD);
  const cmd = chain.at(-1)?.cmd ?? [];
  const flags = cmd.slice(1).filter((a) => a.startsWith("--"));
  return { env: kept, flags };
}

/** This machine's copy of a preloaded library named by its image path. */
function hostLibrary(imagePath: string): string {
  const name = basename(imagePath);
  const dirs = ["/usr/local/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib"];
  const found = dirs.map((d) => join(d, name)).find((p) => existsSync(p));
  if (!found) throw new Error(`the image preloads ${name}, not found here: run bash scripts/setup.d/25-jemalloc.sh`);
  return found;
}
