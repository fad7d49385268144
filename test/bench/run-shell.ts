// Runs a shell benchmark (bench/**/*.sh) for run-bench.ts's smoke(), which starts its file with
// node: `node test/bench/run-shell.ts --smoke bench/x.sh [args]` runs `bash bench/x.sh --smoke
// [args]` with the same output and exit code.
import { spawn } from "node:child_process";

const [script, ...args] = process.argv.slice(2).filter((a) => a !== "--smoke");
if (!script?.endsWith(".sh")) {
  console.error("usage: node test/bench/run-shell.ts --smoke bench/<file>.sh [args]");
  process.exit(2);
}
spawn("bash", [script, "--smoke", ...args], { stdio: "inherit" }).on("exit", (code, signal) =>
  process.exit(code ?? (signal ? 1 : 0)),
);
