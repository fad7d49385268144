// Writes crds/<plural>.capstan.dev.yaml from the zod schemas. `npm run crds` after changing a schema;
// the drift test fails when the committed YAML differs from what this prints.
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { renderCrds } from "./render.ts";

const dir = fileURLToPath(new URL("../../../../crds/", import.meta.url));
for (const { file, yaml } of renderCrds()) {
  writeFileSync(dir + file, yaml);
  console.log(`wrote crds/${file}`);
}
