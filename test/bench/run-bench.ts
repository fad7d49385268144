// Runs one benchmark in its smoke mode (bench/work.ts: `--smoke`, tiny sizes) as the person who
// measures would, `node bench/<file>.ts --smoke [args]` (`bash bench/<file>.sh --smoke [args]`),
// and returns what it printed. The
// benchmark itself checks that it did its work and exits non-zero when it did not; this adds the
// check that it reached its "work checked:" line. No timing is asserted.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface BenchRun {
  code: number | null;
  output: string;
}

export function runBench(
  file: string,
  args: string[] = [],
  opts: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<BenchRun> {
  return new Promise((resolve, reject) => {
    // A shell benchmark runs with bash; a TypeScript one with this Node. Its own process group,
    // so a benchmark that outlives its time is stopped with every server it started.
    const [cmd, first] = file.endsWith(".sh") ? ["bash", file] : [process.execPath, file];
    const child = spawn(cmd, [first, "--smoke", ...args], {
      cwd: ROOT,
      env: { ...process.env, BENCH_SMOKE: "1", ...opts.env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    const killGroup = () => {
      try {
        process.kill(-(child.pid as number), "SIGKILL");
      } catch {
        // the group is gone already
      }
    };
    let output = "";
    child.stdout.on("data", (c: Buffer) => {
      output += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      output += c.toString();
    });
    const timer = setTimeout(() => {
      killGroup();
      reject(new Error(`${file} --smoke did not finish in ${opts.timeoutMs ?? 120_000} ms:\n${output.slice(-4000)}`));
    }, opts.timeoutMs ?? 120_000);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      killGroup(); // whatever it left behind (a server a failed benchmark did not stop)
      resolve({ code, output });
    });
  });
}

/** Runs the benchmark in smoke mode and fails with its output unless it exited 0 with its work checked. */
export async function smoke(file: string, args: string[] = [], opts: Parameters<typeof runBench>[2] = {}) {
  const run = await runBench(file, args, opts);
  if (run.code !== 0 || !run.output.includes("work checked:")) {
    throw new Error(`${file} --smoke exited ${run.code}:\n${run.output.slice(-4000)}`);
  }
  return run.output;
}
