// Starts the scraper from the environment (imported by main.ts once tracing is on). SCRAPER_ROLE picks what this process runs:
// "all" (default, standalone: API + rendering service), "api" or "render" (the two containers
// of the operator's pod).
import {
  createLogger,
  listenInternal,
  loadConfigOrExit,
  releaseMemoryWhenIdle,
  shutdownTracing,
  stopOnSignals,
} from "@capstan/shared";
import { buildApp } from "./api/app.ts";
import { configWarnings, loadScraperConfig } from "./config.ts";
import { buildRenderService } from "./render/app.ts";

const role = process.env.SCRAPER_ROLE ?? "all";
if (!["all", "api", "render"].includes(role)) {
  console.error(`invalid configuration:\n  SCRAPER_ROLE: must be all, api or render (got '${role}')`);
  process.exit(2);
}

let config = loadConfigOrExit(() => loadScraperConfig(process.env));
const startupLogger = createLogger({ name: "scraper", level: config.logLevel });
for (const warning of configWarnings(config)) startupLogger.warn(warning);

const closers: (() => Promise<void>)[] = [];

if (role !== "api") {
  const render = buildRenderService(config);
  await render.start();
  await render.app.listen({ port: config.renderPort, host: role === "all" ? "127.0.0.1" : config.host });
  closers.push(() => render.close());
  if (role === "all" && !process.env.RENDER_URL) {
    const addr = render.app.server.address();
    const port = typeof addr === "object" && addr ? addr.port : config.renderPort;
    config = { ...config, renderUrl: `http://127.0.0.1:${port}` };
  }
}
if (role !== "render") {
  const app = buildApp(config);
  await app.listen({ port: config.internalPort ?? config.port, host: config.host });
  await listenInternal(app, { port: config.adminPort, host: config.host });
  closers.unshift(() => app.close());
}

const stopReleasing = releaseMemoryWhenIdle({ logger: startupLogger });
closers.unshift(async () => stopReleasing());
stopOnSignals(
  async () => {
    // Every closer runs; the first failure is reported once all have.
    let failure: unknown;
    for (const close of closers) {
      await close().catch((err: unknown) => {
        failure ??= err;
      });
    }
    await shutdownTracing().catch(() => {});
    if (failure) throw failure;
  },
  { logger: startupLogger },
);
