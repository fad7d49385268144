// Config loading, in one order for every process: code defaults (in the zod schema), then an
// optional YAML/JSON file, then environment variables, then one parse that fails fast with a
// message naming every bad field. Unknown keys (of the file, the overrides) fail it too, each named
// with the nearest valid key. With `strictEnv`, so does every environment variable under the
// process's own prefixes that no Capstan process reads (env-names.ts).
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import type { z } from "zod";
import { unknownKeys } from "./config-keys.ts";
import { type StrictEnv, unknownEnv } from "./env-names.ts";

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/** Maps environment variable names to dotted config paths, with an optional converter. */
export type EnvMap = Record<string, string | { path: string; parse: (raw: string) => unknown }>;

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split(".");
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (next === null || typeof next !== "object") node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts.at(-1) as string] = value;
}

export const envParsers = {
  bool: (raw: string): boolean | string => {
    const v = raw.trim().toLowerCase();
    if (["true", "1", "yes", "on"].includes(v)) return true;
    if (["false", "0", "no", "off", ""].includes(v)) return false;
    return raw; // left as a string so the schema reports it
  },
  int: (raw: string): number | string => (/^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : raw),
  list: (raw: string): string[] =>
    raw
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
};

export interface LoadConfigOptions {
  env?: NodeJS.ProcessEnv;
  envMap?: EnvMap;
  /** Path of a YAML or JSON file; overridden by env. */
  file?: string | undefined;
  /** Object merged last (tests, embedding callers). */
  overrides?: Record<string, unknown>;
  /** Refuse unknown variables under these prefixes (the env map's names are known). */
  strictEnv?: StrictEnv;
}

function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const cur = out[k];
    out[k] =
      v && typeof v === "object" && !Array.isArray(v) && cur && typeof cur === "object" && !Array.isArray(cur)
        ? deepMerge(cur as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}

export function loadConfig<S extends z.ZodType>(schema: S, opts: LoadConfigOptions = {}): z.infer<S> {
  const env = opts.env ?? process.env;
  let raw: Record<string, unknown> = {};
  if (opts.file) {
    try {
      raw = (parseYaml(readFileSync(opts.file, "utf8")) as Record<string, unknown> | null) ?? {};
    } catch (err) {
      throw new ConfigError(`cannot read config file ${opts.file}: ${(err as Error).message}`);
    }
  }
  for (const [name, target] of Object.entries(opts.envMap ?? {})) {
    const value = env[name];
    // Empty means unset, for every process: a Helm value left at "" or a variable exported empty
    // keeps the file's value or the default instead of failing a `min(1)` or URL check.
    if (value === undefined || value.trim() === "") continue;
    if (typeof target === "string") setPath(raw, target, value);
    else setPath(raw, target.path, target.parse(value));
  }
  if (opts.overrides) raw = deepMerge(raw, opts.overrides);
  const strayEnv = opts.strictEnv
    ? unknownEnv(env, [...Object.keys(opts.envMap ?? {}), ...(opts.strictEnv.also ?? [])], opts.strictEnv)
    : [];
  if (strayEnv.length > 0) throw new ConfigError(`invalid configuration:\n  ${strayEnv.join("\n  ")}`);
  const unknown = unknownKeys(schema, raw);
  if (unknown.length > 0) {
    throw new ConfigError(`invalid configuration${opts.file ? ` (${opts.file})` : ""}:\n  ${unknown.join("\n  ")}`);
  }
  const result = schema.safeParse(raw);
  if (!result.success) {
    const envByPath = new Map(
      Object.entries(opts.envMap ?? {}).map(([name, t]) => [typeof t === "string" ? t : t.path, name]),
    );
    const lines = result.error.issues.map((issue) => {
      const path = issue.path.join(".");
      const envName = envByPath.get(path);
      return `  ${path || "(root)"}${envName ? ` (${envName})` : ""}: ${issue.message}`;
    });
    throw new ConfigError(`invalid configuration:\n${lines.join("\n")}`);
  }
  return result.data;
}

/**
 * For a process's main: the loaded config, or, on a ConfigError, its message on stderr and exit
 * code 2 (a configuration mistake, not a crash). Any other error propagates.
 */
export function loadConfigOrExit<T>(load: () => T, prefix = ""): T {
  try {
    return load();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${prefix}${err.message}\n`);
    process.exit(2);
  }
}
