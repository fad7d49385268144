// The fake OpenAI-compatible provider of the tests as a process of its own for the benchmarks;
// prints its base URL on the first line of stdout.
import { startFakeOpenAI } from "../../test/gateway/fake-openai.ts";

const fake = await startFakeOpenAI();
// Benchmarks make many calls: keep no record of them.
setInterval(() => fake.calls.splice(0), 1000).unref();
process.stdout.write(`${fake.url}\n`);
process.on("SIGTERM", () => {
  void fake.close().then(() => process.exit(0));
});
