// Writes charts/capstan/files/** from their sources; the drift test fails when they differ.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { chartFiles } from "./render.ts";

const chart = fileURLToPath(new URL("../../../charts/capstan/", import.meta.url));
for (const { path, text } of chartFiles()) {
  mkdirSync(dirname(chart + path), { recursive: true });
  writeFileSync(chart + path, text);
  console.log(`wrote charts/capstan/${path}`);
}
