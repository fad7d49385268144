// A stand-in service for the supervisor's tests: listens on PORT, answers 200, and stops like the
// real services (shared/lifecycle.ts): the first SIGTERM or SIGINT closes the server and exits 0
// after a short drain, a second signal during it exits 1 at once.
import { createServer } from "node:http";

let signals = 0;
const server = createServer((_req, res) => res.end("ok")).listen(Number(process.env.PORT), "127.0.0.1");
const onSignal = (signal: NodeJS.Signals) => {
  signals += 1;
  if (signals > 1) {
    console.log(`second signal ${signal} during shutdown`);
    process.exit(1);
  }
  setTimeout(() => server.close(() => process.exit(0)), 300);
};
process.on("SIGINT", onSignal);
process.on("SIGTERM", onSignal);
console.log(`listening pid=${process.pid}`);
