// Bundles one Capstan process for its image: esbuild follows the imports from the process's
// entry point (tree shaking what nothing uses) and writes ES modules next to where the sources
// were, so paths the code resolves from its own location (the console's ../dist/) stay right.
// Packages that cannot be bundled (native addons, packages that read files beside themselves or
// are patched through require()) stay outside; they and their own dependencies are copied from
// node_modules, nothing else is.
//
//   node scripts/images/bundle.mjs NAME OUT_DIR      (NAME: gateway, search, scraper, operator, console)
//
// OUT_DIR then holds the tree the image copies into /app: <package>/src/*.mjs and node_modules/
// with only the external packages. Run from the repository root (or /app in the image), after
// `npm install` of that process's workspace. ESBUILD may name esbuild's main module when it is not
// installed where the repository's node_modules are (the image's bundle stage).
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { pathToFileURL } from "node:url";

/**
 * Each process: its entry points (the main module, worker scripts) and the packages left out of
 * the bundle, each with why.
 */
export const PROCESSES = {
  gateway: { dir: "services/gateway", entries: ["main.ts"], external: [] },
  search: {
    dir: "services/search",
    // The embedding workers run a script of their own (embedding/local.ts finds it beside main);
    // the image check (scripts/images/smoke.sh) loads the embedder on its own.
    entries: ["main.ts", "embedding/embed-worker.ts", "embedding/local.ts", "embedding/model-files.ts"],
    external: [
      "onnxruntime-node", // native addon, loads its .node binary and shared libraries from its folder
      "usearch", // native addon
    ],
  },
  scraper: {
    dir: "services/scraper",
    entries: ["main.ts"],
    external: [
      "playwright-core", // resolves its own files (protocol, injected scripts) from its folder
      "robots-parser", // loaded with createRequire() at run time (crawl/site-files.ts)
    ],
  },
  operator: { dir: "operator", entries: ["main.ts"], external: [] },
  console: { dir: "console", entries: ["main.ts"], external: [] },
};

/** Left out of every bundle. */
const COMMON_EXTERNAL = [
  // The tracing patches ioredis through require() (services/shared/src/tracing.ts): a bundled
  // copy would not be the patched one.
  "ioredis",
  // Serves the /docs page's assets from its own folder (and @fastify/static with it).
  "@fastify/swagger-ui",
];

// ESM output with CommonJS packages inside: their require() of Node builtins needs a real require.
const BANNER = [
  'import { createRequire as __capstanCreateRequire } from "node:module";',
  "const require = __capstanCreateRequire(import.meta.url);",
].join("\n");

/**
 * V8 keeps each module's source in memory, as a two-byte string when one character of it is not
 * Latin-1: one bullet in a regular expression doubled the console's 9.9 MB module to 19 MB of
 * heap. esbuild escapes strings and identifiers (charset "ascii") but not regular-expression
 * literals, so every non-ASCII UTF-16 unit left is written as \uXXXX, which means the same in a
 * string, an identifier and a regular expression (an astral character becomes its surrogate
 * pair, which a /u expression reads as the one code point).
 */
// Every UTF-16 unit above 0x7f (a pair's two halves one by one, as \u escapes write them).
const NON_ASCII = /[\u0080-\uffff]/g;
function asciiOnly(file) {
  const text = readFileSync(file, "utf8");
  if (!text.match(NON_ASCII)) return;
  writeFileSync(
    file,
    text.replace(NON_ASCII, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`),
  );
}

/** The external packages and every package they depend on, as folders under root (nested ones too). */
export function packageClosure(root, names) {
  const seen = new Set();
  const visit = (name, from) => {
    // Node's lookup: node_modules of the requiring package's folder, then of each parent.
    for (let dir = from; ; dir = dirname(dir)) {
      const candidate = join(dir, "node_modules", name);
      if (existsSync(join(candidate, "package.json"))) {
        if (seen.has(candidate)) return;
        seen.add(candidate);
        const pkg = JSON.parse(readFileSync(join(candidate, "package.json"), "utf8"));
        for (const dep of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies })) visit(dep, candidate);
        return;
      }
      if (dir === root || dirname(dir) === dir) {
        const pkg = JSON.parse(readFileSync(join(from, "package.json"), "utf8"));
        // A missing optional dependency (another platform's binary) is fine; a required one is not.
        if (pkg.optionalDependencies?.[name] || pkg.peerDependenciesMeta?.[name]?.optional) return;
        throw new Error(`bundle: ${name} (needed by ${relative(root, from) || "the root"}) is not installed`);
      }
    }
  };
  for (const name of names) visit(name, root);
  return [...seen].sort();
}

export async function bundle(name, out, root = process.cwd()) {
  const proc = PROCESSES[name];
  if (!proc) throw new Error(`bundle: unknown process ${name} (one of ${Object.keys(PROCESSES).join(", ")})`);
  const esbuild = await import(process.env.ESBUILD ? pathToFileURL(process.env.ESBUILD).href : "esbuild");
  const external = [...COMMON_EXTERNAL, ...proc.external];
  const outdir = join(out, proc.dir, "src");
  rmSync(out, { recursive: true, force: true });
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: proc.entries.map((e) => ({
      in: join(proc.dir, "src", e),
      out: e.replace(/^.*\//, "").replace(/\.ts$/, ""),
    })),
    outdir,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node24",
    outExtension: { ".js": ".mjs" },
    chunkNames: "chunk-[hash]",
    external,
    banner: { js: BANNER },
    // Names stay: error classes and logs print them.
    keepNames: true,
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: "none",
    charset: "ascii",
    metafile: true,
    logLevel: "warning",
  });
  writeFileSync(join(out, `${name}.meta.json`), JSON.stringify(result.metafile));
  for (const file of Object.keys(result.metafile.outputs)) asciiOnly(join(root, file));
  for (const dir of packageClosure(root, external)) {
    const dest = join(out, relative(root, dir));
    mkdirSync(dirname(dest), { recursive: true });
    cpSync(dir, dest, { recursive: true, dereference: true });
  }
  // The workspace's package.json: "type": "module" and the name, as beside the sources.
  cpSync(join(root, proc.dir, "package.json"), join(out, proc.dir, "package.json"));
  return result.metafile;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [name, out] = process.argv.slice(2);
  if (!name || !out) {
    process.stderr.write("usage: node scripts/images/bundle.mjs NAME OUT_DIR\n");
    process.exit(2);
  }
  const meta = await bundle(name, out);
  const bytes = Object.values(meta.outputs).reduce((s, o) => s + o.bytes, 0);
  process.stdout.write(
    `[bundle] ${name}: ${Object.keys(meta.outputs).length} files, ${(bytes / 1e6).toFixed(1)} MB in ${out}\n`,
  );
}
