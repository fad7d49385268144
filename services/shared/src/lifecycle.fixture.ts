// A process for lifecycle.test.ts: prints "ready", then stops on a signal as STOP says: "ok"
// (takes 500 ms, then succeeds), "fail" or "hang".
import { stopOnSignals } from "./lifecycle.ts";

const mode = process.env.STOP ?? "ok";
const keepAlive = setInterval(() => {}, 1_000);
stopOnSignals(
  async (signal) => {
    process.stdout.write(`stopping on ${signal}\n`);
    if (mode === "fail") throw new Error("cannot close");
    if (mode === "hang") await new Promise(() => {});
    await new Promise((resolve) => setTimeout(resolve, 500));
    clearInterval(keepAlive);
  },
  { graceMs: 1_000 },
);
process.stdout.write("ready\n");
