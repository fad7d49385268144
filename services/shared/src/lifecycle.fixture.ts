// A process for lifecycle.test.ts: prints "ready", then stops on a signal as STOP says
// ("ok", "fail" or "hang").
import { stopOnSignals } from "./lifecycle.ts";

const mode = process.env.STOP ?? "ok";
const keepAlive = setInterval(() => {}, 1_000);
stopOnSignals(
  async (signal) => {
    process.stdout.write(`stopping on ${signal}\n`);
    if (mode === "fail") throw new Error("cannot close");
    if (mode === "hang") await new Promise(() => {});
    await new Promise((resolve) => setTimeout(resolve, 100)); // a signal may arrive meanwhile
    clearInterval(keepAlive);
  },
  { graceMs: 300 },
);
process.stdout.write("ready\n");
