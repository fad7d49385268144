// Runs schemathesis (PyPI, installed by scripts/setup.d/65-schemathesis.sh into its own virtual
// environment under ~/.cache/capstan) against a running service's published /openapi.json:
// bounded examples per operation, a per-request timeout (a hang fails the run) and a hard kill of
// the whole run. Also validates the document with openapi-spec-validator.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

/** Pinned in scripts/setup.d/65-schemathesis.sh; keep the two in step. */
export const SCHEMATHESIS_VERSION = "4.32.5";

const venv = join(
  process.env.CAPSTAN_CACHE ?? join(homedir(), ".cache", "capstan"),
  "schemathesis",
  SCHEMATHESIS_VERSION,
);

/**
 * The checks every run asserts: no 5xx; every status code, content type, declared header and body
 * as the document says. A request without an answer within `requestTimeoutS` fails the run too.
 */
export const CHECKS = [
  "not_a_server_error",
  "status_code_conformance",
  "content_type_conformance",
  "response_headers_conformance",
  "response_schema_conformance",
];

export interface FuzzOptions {
  /** The service's origin, e.g. http://127.0.0.1:3000 (its document is at /openapi.json). */
  origin: string;
  /** Extra request headers, e.g. { authorization: "Bearer <key>" }. */
  headers?: Record<string, string>;
  /** Test cases per operation and phase. */
  maxExamples: number;
  /**
   * The whole run is killed after this long (and fails). Not schemathesis' own --max-time: with a
   * budget it keeps fuzzing until the budget is spent, so every run would last that long.
   */
  hardTimeoutS: number;
  /** Extra environment of schemathesis, e.g. SCHEMATHESIS_HOOKS (a Python file of hooks). */
  env?: Record<string, string>;
  /** Per-request timeout: a request without an answer by then fails the run. */
  requestTimeoutS: number;
}

export interface RunResult {
  code: number | null;
  output: string;
}

/** Fails with the command that installs schemathesis when it is missing (never a silent skip). */
export function schemathesisBin(name: "st" | "openapi-spec-validator"): string {
  const bin = join(venv, "bin", name);
  if (!existsSync(bin)) {
    throw new Error(
      `${bin} is missing: run \`bash scripts/setup.d/65-schemathesis.sh\` (schemathesis ${SCHEMATHESIS_VERSION})`,
    );
  }
  return bin;
}

/** Runs a command with a hard timeout (SIGKILL to its process group); output is stdout + stderr. */
function run(
  cmd: string,
  args: string[],
  cwd: string,
  hardTimeoutMs: number,
  env: Record<string, string> = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      // No proxy may take loopback traffic elsewhere; no colour codes in the captured summary.
      env: { ...process.env, NO_COLOR: "1", NO_PROXY: "*", HTTP_PROXY: "", HTTPS_PROXY: "", COLUMNS: "160", ...env },
    });
    let output = "";
    child.stdout.on("data", (c: Buffer) => {
      output += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      output += c.toString();
    });
    const timer = setTimeout(() => {
      output += `\n[fuzz] killed after the hard timeout of ${hardTimeoutMs} ms\n`;
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    }, hardTimeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/**
 * schemathesis against `<origin>/openapi.json`, every phase but the stateful one (no links between
 * operations are declared), one worker (a 2-core machine), a fixed seed so CI replays the same
 * cases (CAPSTAN_FUZZ_SEED picks another, CAPSTAN_FUZZ_MAX_EXAMPLES a deeper run). Exit code 0 means every check held on every case.
 */
export async function fuzz(opts: FuzzOptions): Promise<RunResult> {
  const st = schemathesisBin("st");
  const cwd = mkdtempSync(join(tmpdir(), "capstan-fuzz-"));
  const args = [
    "run",
    `${opts.origin}/openapi.json`,
    "--url",
    opts.origin,
    "--checks",
    CHECKS.join(","),
    "--phases",
    "examples,coverage,fuzzing",
    "--max-examples",
    process.env.CAPSTAN_FUZZ_MAX_EXAMPLES ?? String(opts.maxExamples),
    "--request-timeout",
    String(opts.requestTimeoutS),
    "--workers",
    "1",
    "--seed",
    process.env.CAPSTAN_FUZZ_SEED ?? "16",
    "--no-shrink",
    "--suppress-health-check",
    "all",
    "--output-truncate",
    "false",
    ...Object.entries(opts.headers ?? {}).flatMap(([k, v]) => ["-H", `${k}: ${v}`]),
  ];
  try {
    return await run(st, args, cwd, opts.hardTimeoutS * 1000, opts.env);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

/** openapi-spec-validator on the document the service serves (exit code 0: a valid OpenAPI 3.1). */
export async function validateDocument(origin: string): Promise<RunResult> {
  const validator = schemathesisBin("openapi-spec-validator");
  const res = await fetch(`${origin}/openapi.json`);
  if (res.status !== 200) return { code: -1, output: `GET /openapi.json answered ${res.status}` };
  const cwd = mkdtempSync(join(tmpdir(), "capstan-openapi-"));
  try {
    writeFileSync(join(cwd, "openapi.json"), await res.text());
    return await run(validator, ["openapi.json"], cwd, 60_000);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}
