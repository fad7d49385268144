// Builds the frontend (console/web) into console/dist with Vite: plain files the console serves
// itself, so nothing is fetched from a CDN at run time. Run by `npm run build -w @capstan/console`,
// by the image build, by standalone mode when dist is missing, and by the console's tests.
import { fileURLToPath } from "node:url";

export const WEB_DIR = fileURLToPath(new URL("../web/", import.meta.url));
const DIST_DIR = fileURLToPath(new URL("../dist/", import.meta.url));

export async function buildFrontend(outDir: string = DIST_DIR): Promise<string> {
  // Vite is a build tool (a dev dependency): loaded only when building.
  const { build } = await import("vite");
  await build({
    root: WEB_DIR,
    configFile: false,
    logLevel: "warn",
    base: "/",
    esbuild: { jsx: "automatic", jsxImportSource: "preact" },
    build: {
      outDir,
      emptyOutDir: true,
      // No inline scripts or data: scripts: the Content-Security-Policy allows only 'self'.
      assetsInlineLimit: 0,
      modulePreload: { polyfill: false },
      chunkSizeWarningLimit: 1024,
      rollupOptions: {
        // zod's sources carry comments Rollup cannot place; harmless, and noise in every build.
        onwarn(warning, warn) {
          if (warning.code !== "INVALID_ANNOTATION") warn(warning);
        },
      },
    },
  });
  return outDir;
}

if (import.meta.main) {
  const out = await buildFrontend(process.argv[2]);
  process.stdout.write(`console frontend built into ${out}\n`);
}
