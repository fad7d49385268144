// A launcher of two stand-in services (service.ts) on PORT_A and PORT_B, as main.ts runs the real
// ones: one Ctrl-C (SIGINT) stops both, one line each.
import { Supervisor, waitReady } from "../processes.ts";

const say = (line: string) => process.stdout.write(`${line}\n`);
const supervisor = new Supervisor({ say, initialBackoffMs: 100 });
const entry = new URL("./service.ts", import.meta.url).pathname;
const services = (["a", "b"] as const).map((name) => {
  const port = process.env[`PORT_${name.toUpperCase()}`] as string;
  return supervisor.start({ name, entry, url: `http://127.0.0.1:${port}`, readyPath: "/", env: { PORT: port } });
});
let stopping = false;
process.on("SIGINT", () => {
  if (stopping) process.exit(1);
  stopping = true;
  say("Stopping");
  void supervisor.stopAll().then(() => process.exit(0));
});
await Promise.all(services.map((s) => waitReady(s, 50_000)));
say(`ready ${services.map((s) => s.child.pid).join(" ")}`);
