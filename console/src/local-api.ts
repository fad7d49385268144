// Standalone mode's API (no cluster): the console reads and writes the same capstan.dev resources
// in the launcher's YAML folder that a platform team would apply, and the launcher (watching that
// folder) does what the operator does in a cluster: it issues keys into <state>/keys.json and
// writes every resource back with its status into <state>/resources/resources.yaml. So:
//   - list/get: the folder's resources, with the status from the state folder;
//   - create: a new file <kind>-<namespace>-<name>.yaml; patch: that object's document rewritten
//     in place (other documents and their comments untouched); remove: that document dropped;
//   - a channel's "Secret" <name>-chat-key (a search key's <name>-search-key) is its entry in
//     keys.json: reading it shows the key, deleting it makes the launcher issue a new one.
// The signed-in admin may do everything; errors are KubeApiErrors, as the API server's would be.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { KINDS, parseResource } from "@capstan/shared/api";
import { KubeApiError } from "@capstan/shared/kube";
import { type Document, parseAllDocuments, stringify } from "yaml";
import type { SessionUser } from "./sessions.ts";
import type { ConsoleApi, KubeObject, ResourceRule } from "./user-api.ts";

export interface LocalStore {
  /** The folder of YAML the launcher serves and watches (CAPSTAN_RESOURCES_DIR). */
  resourcesDir: string;
  /** The launcher's state folder: keys.json and resources/resources.yaml (CAPSTAN_STATE_DIR). */
  stateDir: string;
}

export const LOCAL_ADMIN: SessionUser = { username: "standalone-admin", groups: ["capstan:standalone-admin"] };

const KIND_OF_PLURAL = new Map<string, string>(Object.values(KINDS).map((k) => [k.plural, k.kind]));
const SECRET_SUFFIX: Record<string, string> = { AccessChannel: "chat-key", SearchKey: "search-key" };

const notFound = (what: string, name: string) =>
  new KubeApiError(404, "NotFound", `${what} "${name}" not found`, { reason: "NotFound" });
const invalid = (message: string) => new KubeApiError(422, "Invalid", message, { reason: "Invalid" });

interface Located {
  file: string;
  docs: Document[];
  index: number;
  obj: KubeObject;
  /** Whether the document names its namespace (else it is "default" and stays unnamed). */
  namedNamespace: boolean;
}

/** A JSON merge patch (RFC 7386) of `patch` onto `target`. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    target !== null && typeof target === "object" && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** What stands for resourceVersion: a digest of the object as written, so a stale write is refused (409). */
const versionOf = (o: KubeObject) =>
  createHash("sha256")
    .update(JSON.stringify({ metadata: { ...o.metadata, resourceVersion: undefined }, spec: o.spec }))
    .digest("hex")
    .slice(0, 16);

/** Written next to the file, then renamed over it: the launcher's watcher never reads half a file. */
function writeAtomic(path: string, text: string): void {
  const tmp = `${path}.console-${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

export class LocalApi implements ConsoleApi {
  readonly inlineDocuments = true;
  private readonly store: LocalStore;
  constructor(store: LocalStore) {
    this.store = store;
  }

  async whoAmI(): Promise<SessionUser> {
    return LOCAL_ADMIN;
  }

  async rules(): Promise<ResourceRule[]> {
    return [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }];
  }

  /** Every capstan.dev object of the folder (temporary files of a write in progress are not read). */
  private locateAll(): Located[] {
    const out: Located[] = [];
    const files = readdirSync(this.store.resourcesDir)
      .filter((f) => /\.(ya?ml|json)$/.test(f))
      .sort();
    for (const f of files) {
      const file = join(this.store.resourcesDir, f);
      const docs = parseAllDocuments(readFileSync(file, "utf8"));
      if (!Array.isArray(docs)) continue;
      docs.forEach((doc, index) => {
        const raw = doc.toJS() as KubeObject | null;
        if (!raw?.apiVersion?.startsWith("capstan.dev/") || !raw.metadata?.name) return;
        const created = raw.metadata.creationTimestamp ?? statSync(file).mtime.toISOString();
        const metadata = { ...raw.metadata, namespace: raw.metadata.namespace ?? "default" };
        const obj = { ...raw, metadata: { ...metadata, creationTimestamp: created } };
        out.push({ file, docs, index, obj, namedNamespace: raw.metadata.namespace !== undefined });
      });
    }
    return out;
  }

  /** The status the launcher wrote for each object, by kind/namespace/name. */
  private statuses(): Map<string, Record<string, unknown>> {
    const path = join(this.store.stateDir, "resources", "resources.yaml");
    const out = new Map<string, Record<string, unknown>>();
    if (!existsSync(path)) return out;
    for (const doc of parseAllDocuments(readFileSync(path, "utf8")) as Document[]) {
      const r = doc.toJS() as KubeObject | null;
      if (r?.status) out.set(`${r.kind}/${r.metadata.namespace ?? "default"}/${r.metadata.name}`, r.status);
    }
    return out;
  }

  private view(o: KubeObject, statuses: Map<string, Record<string, unknown>>): KubeObject {
    const status = statuses.get(`${o.kind}/${o.metadata.namespace}/${o.metadata.name}`);
    const suffix = SECRET_SUFFIX[o.kind ?? ""];
    return {
      ...o,
      metadata: { ...o.metadata, resourceVersion: versionOf(o) },
      // The launcher names no Secret (keys live in keys.json): the console addresses the key by the cluster's name.
      ...(status ? { status: suffix ? { ...status, secretName: `${o.metadata.name}-${suffix}` } : status } : {}),
    };
  }

  private kindOf(plural: string): string {
    const kind = KIND_OF_PLURAL.get(plural);
    if (!kind) throw notFound("resource type", plural);
    return kind;
  }

  private find(plural: string, ns: string, name: string): Located {
    const kind = this.kindOf(plural);
    const found = this.locateAll().find(
      (l) => l.obj.kind === kind && l.obj.metadata.namespace === ns && l.obj.metadata.name === name,
    );
    if (!found) throw notFound(plural, name);
    return found;
  }

  async list(plural: string, ns: string): Promise<{ items: KubeObject[] }> {
    const kind = this.kindOf(plural);
    const statuses = this.statuses();
    const items = this.locateAll()
      .filter((l) => l.obj.kind === kind && l.obj.metadata.namespace === ns)
      .map((l) => this.view(l.obj, statuses));
    return { items };
  }

  async get(plural: string, ns: string, name: string): Promise<KubeObject> {
    return this.view(this.find(plural, ns, name).obj, this.statuses());
  }

  /** Checked as the launcher will read it (the CRD's zod schemas), so a bad object never stops the folder loading. */
  private checked(obj: KubeObject): KubeObject {
    const { status: _status, ...rest } = obj;
    const { resourceVersion: _rv, creationTimestamp: _ct, ...metadata } = rest.metadata;
    const clean = { ...rest, metadata };
    try {
      parseResource(clean);
    } catch (err) {
      throw invalid((err as Error).message);
    }
    return clean;
  }

  async create(plural: string, ns: string, body: KubeObject): Promise<KubeObject> {
    const kind = this.kindOf(plural);
    const name = body.metadata.name;
    if (
      this.locateAll().some(
        (l) => l.obj.kind === kind && l.obj.metadata.namespace === ns && l.obj.metadata.name === name,
      )
    )
      throw new KubeApiError(409, "AlreadyExists", `${plural} "${name}" already exists`, { reason: "AlreadyExists" });
    const obj = this.checked({ ...body, kind, metadata: { ...body.metadata, namespace: ns } });
    const file = join(this.store.resourcesDir, `${kind.toLowerCase()}-${ns}-${name}.yaml`);
    if (existsSync(file)) throw new KubeApiError(409, "AlreadyExists", `${file} already exists`, {});
    writeAtomic(file, `# Created with the console.\n${stringify(obj)}`);
    return this.get(plural, ns, name);
  }

  async patch(plural: string, ns: string, name: string, body: unknown): Promise<KubeObject> {
    const at = this.find(plural, ns, name);
    const wanted = (body as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
    if (wanted && wanted !== versionOf(at.obj)) {
      throw new KubeApiError(
        409,
        "Conflict",
        `${plural} "${name}" was changed since you read it: reload and retry`,
        {},
      );
    }
    const next = this.checked(mergePatch(at.obj, body) as KubeObject);
    if (!at.namedNamespace) delete next.metadata.namespace; // as it was written
    this.write(at, next);
    return this.get(plural, ns, name);
  }

  async remove(plural: string, ns: string, name: string): Promise<void> {
    this.write(this.find(plural, ns, name), undefined);
  }

  /** The file with the object's document replaced (or dropped when `obj` is undefined). */
  private write(at: Located, obj: KubeObject | undefined): void {
    const docs = at.docs.flatMap((d, i) => {
      if (i !== at.index) return [d.toString()];
      if (!obj) return [];
      d.contents = d.createNode(obj) as typeof d.contents;
      return [d.toString()];
    });
    if (docs.length === 0) {
      unlinkSync(at.file);
      return;
    }
    if (at.file.endsWith(".json")) {
      if (!obj) throw invalid(`${at.file} holds one JSON object: delete the file instead`);
      writeAtomic(at.file, `${JSON.stringify(obj, null, 2)}\n`);
      return;
    }
    // Every document after the first starts with its own `---` (kept by the parser when it was there).
    writeAtomic(at.file, docs.map((text, i) => (i === 0 || text.startsWith("---") ? text : `---\n${text}`)).join(""));
  }

  private keysPath(): string {
    return join(this.store.stateDir, "keys.json");
  }

  /** The keys.json entry a Secret name stands for: `<name>-chat-key` or `<name>-search-key`. */
  private keyId(ns: string, secret: string): string {
    for (const [kind, suffix] of Object.entries(SECRET_SUFFIX)) {
      if (secret.endsWith(`-${suffix}`)) return `${kind}/${ns}/${secret.slice(0, -suffix.length - 1)}`;
    }
    throw notFound("secrets", secret);
  }

  private readKeys(): Record<string, { key: string; issuedAt: string }> {
    return existsSync(this.keysPath()) ? JSON.parse(readFileSync(this.keysPath(), "utf8")) : {};
  }

  async getSecret(ns: string, name: string): Promise<KubeObject> {
    const entry = this.readKeys()[this.keyId(ns, name)];
    if (!entry) throw notFound("secrets", name);
    return { metadata: { name, namespace: ns }, data: { key: Buffer.from(entry.key).toString("base64") } };
  }

  async deleteSecret(ns: string, name: string): Promise<void> {
    const keys = this.readKeys();
    const id = this.keyId(ns, name);
    if (!keys[id]) throw notFound("secrets", name);
    delete keys[id];
    writeFileSync(this.keysPath(), `${JSON.stringify(keys, null, 2)}\n`, { mode: 0o600 });
  }

  async createConfigMap(): Promise<void> {
    throw new KubeApiError(
      501,
      "NotImplemented",
      "standalone mode keeps documents as inline text sources in the YAML folder, not as ConfigMaps",
      {},
    );
  }

  async replaceConfigMap(): Promise<void> {
    return this.createConfigMap();
  }

  async close(): Promise<void> {}
}
