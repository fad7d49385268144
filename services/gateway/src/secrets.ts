// Where provider keys come from. In a cluster the Agent's spec.provider.apiKeySecretRef names a
// Secret that is mounted into the gateway (the operator manages the volume); a mounted Secret is a
// folder with one file per key, so the file resolver reads
//   $CAPSTAN_SECRETS_DIR/<namespace>/<secret>/<key>   or   $CAPSTAN_SECRETS_DIR/<secret>/<key>
// The env resolver reads CAPSTAN_SECRET_<SECRET>_<KEY> (upper-cased, non-alphanumerics as "_"),
// handy for standalone runs. Values are cached for a short time so rotated keys are picked up.
import { readFile } from "node:fs/promises";
import { join } from "node:path";

export interface SecretRef {
  name: string;
  key: string;
}

export interface SecretResolver {
  /** The secret value, or undefined when it does not exist. */
  resolve(namespace: string, ref: SecretRef): Promise<string | undefined>;
}

const SAFE = /^[A-Za-z0-9._-]+$/;

export class FileSecretResolver implements SecretResolver {
  private readonly dir: string;
  private readonly ttlMs: number;
  private readonly cache = new Map<string, { value: string | undefined; until: number }>();

  constructor(dir: string, opts: { ttlMs?: number } = {}) {
    this.dir = dir;
    this.ttlMs = opts.ttlMs ?? 30_000;
  }

  async resolve(namespace: string, ref: SecretRef): Promise<string | undefined> {
    // Names come from resources; refuse anything that could leave the folder.
    if (![namespace, ref.name, ref.key].every((p) => SAFE.test(p) && p !== "." && p !== "..")) return undefined;
    const id = `${namespace}/${ref.name}/${ref.key}`;
    const hit = this.cache.get(id);
    if (hit && hit.until > Date.now()) return hit.value;
    let value: string | undefined;
    for (const path of [join(this.dir, namespace, ref.name, ref.key), join(this.dir, ref.name, ref.key)]) {
      try {
        value = (await readFile(path, "utf8")).replace(/\r?\n$/, "");
        break;
      } catch {
        // try the next layout
      }
    }
    this.cache.set(id, { value, until: Date.now() + this.ttlMs });
    return value;
  }
}

export function envSecretName(ref: SecretRef): string {
  return `CAPSTAN_SECRET_${ref.name}_${ref.key}`.toUpperCase().replace(/[^A-Z0-9]/g, "_");
}

export class EnvSecretResolver implements SecretResolver {
  private readonly env: NodeJS.ProcessEnv;
  constructor(env: NodeJS.ProcessEnv = process.env) {
    this.env = env;
  }
  async resolve(_namespace: string, ref: SecretRef): Promise<string | undefined> {
    return this.env[envSecretName(ref)];
  }
}

/** Tries each resolver in turn. */
export class ChainSecretResolver implements SecretResolver {
  private readonly resolvers: SecretResolver[];
  constructor(resolvers: SecretResolver[]) {
    this.resolvers = resolvers;
  }
  async resolve(namespace: string, ref: SecretRef): Promise<string | undefined> {
    for (const r of this.resolvers) {
      const v = await r.resolve(namespace, ref);
      if (v !== undefined) return v;
    }
    return undefined;
  }
}
