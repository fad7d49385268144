export { buildApp, type ConsoleDeps, DEFAULT_ASSETS_DIR } from "./app.ts";
export { buildFrontend } from "./build.ts";
export { type ConsoleConfig, type ConsoleConfigInput, loadConsoleConfig } from "./config.ts";
