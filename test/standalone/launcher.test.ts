// `npm start` as people live with it, on a copy of examples/ with the real services: keys that
// expired or expire soon are called out at start; a saved change to the folder is applied (a new
// document is searchable, a new channel's key answers); a folder that does not parse is reported
// with the reason and the previous resources keep serving; a service that exits (status 0 or
// killed) is reported and comes back; one Ctrl-C to the process group stops every service, one
// line each (npm forwards the SIGINT too: the launcher takes the two as one Ctrl-C). The console it
// starts, at the address it prints, signs in with the admin token it prints and writes a channel
// into the folder, whose key the gateway then accepts, and an uploaded document, found by try a search. The unit tests
// beside scripts/standalone/ cover the same pieces in isolation.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { trySearchFinds } from "../console/helpers.ts";
import { launchChromium } from "../ground/chromium.ts";
import { signIn } from "../ground/console-users.ts";
import { freePort } from "../ground/ports.ts";

let child: ChildProcess;
let output = "";
let gateway: string;
let search: string;
let browser: Browser | undefined;
const dir = mkdtempSync(join(tmpdir(), "capstan-launcher-"));
const resources = join(dir, "resources");
const soon = new Date(Date.now() + 3 * 86_400_000 + 3_600_000).toISOString().replace(/\.\d+Z$/, "Z");

const channel = (name: string, expiresAt: string) =>
  [
    "apiVersion: capstan.dev/v1alpha1",
    "kind: AccessChannel",
    `metadata: {name: ${name}, namespace: capstan-demo}`,
    "spec:",
    `  channelName: ${name}`,
    "  agentRef: {name: support-assistant}",
    `  expiresAt: "${expiresAt}"`,
    "",
  ].join("\n");

async function waitFor(pattern: RegExp, timeoutMs = 120_000, from = 0): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = output.slice(from).match(pattern);
    if (match) return match;
    if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}:\n${output.slice(-3000)}`);
    if (Date.now() > deadline) throw new Error(`no ${pattern} in time; output:\n${output.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The service process (services/<service>/src/main.ts) started under this test's `npm start`. */
function childPid(service: string): number {
  const rows = execFileSync("ps", ["-eo", "pid=,ppid=,args="], { encoding: "utf8" })
    .split("\n")
    .map((l) => l.trim().match(/^(\d+)\s+(\d+)\s+(.*)$/))
    .filter((m): m is RegExpMatchArray => m !== null)
    .map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), args: m[3] as string }));
  const ours = new Set([child.pid as number]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const r of rows) {
      if (!ours.has(r.ppid) || ours.has(r.pid)) continue;
      ours.add(r.pid);
      grew = true;
    }
  }
  const found = rows.find((r) => ours.has(r.pid) && r.args.includes(`services/${service}/src/main.ts`));
  if (!found) throw new Error(`no ${service} process under npm start (pid ${child.pid})`);
  return found.pid;
}

const chat = (key: string, content: string) =>
  new OpenAI({ apiKey: key, baseURL: `${gateway}/api/v1`, maxRetries: 0 }).chat.completions.create({
    model: "any",
    messages: [{ role: "user", content }],
  });

beforeAll(async () => {
  cpSync(new URL("../../examples/", import.meta.url), resources, { recursive: true });
  writeFileSync(
    join(resources, "old-channels.yaml"),
    `${channel("expired", "2026-01-01T00:00:00Z")}---\n${channel("soon", soon)}`,
  );
  const [gatewayPort, searchPort] = [await freePort(), await freePort()];
  const [gatewayInternalPort, searchInternalPort] = [await freePort(), await freePort()];
  gateway = `http://127.0.0.1:${gatewayPort}`;
  search = `http://127.0.0.1:${searchPort}`;
  // npm start as a person runs it: npm forwards a Ctrl-C to its script on top of the terminal's.
  child = spawn("npm", ["start"], {
    env: {
      ...process.env,
      CAPSTAN_RESOURCES_DIR: resources,
      CAPSTAN_STATE_DIR: join(dir, "state"),
      GATEWAY_PORT: String(gatewayPort),
      SEARCH_PORT: String(searchPort),
      GATEWAY_INTERNAL_PORT: String(gatewayInternalPort),
      SEARCH_INTERNAL_PORT: String(searchInternalPort),
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`, // none: the in-process limiter
      CAPSTAN_SCRAPER: "off",
      CONSOLE_PORT: String(await freePort()),
      CONSOLE_INTERNAL_PORT: String(await freePort()),
      CAPSTAN_RESTART_BACKOFF_MS: "200",
      OTEL_SDK_DISABLED: "true",
    },
    // Its own process group, as a shell's foreground job: Ctrl-C is a SIGINT to the whole group.
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  for (const s of [child.stdout, child.stderr]) s?.on("data", (d: Buffer) => (output += d.toString()));
  await waitFor(/Running\. Ctrl-C stops every service\./, 360_000);
}, 400_000);

afterAll(async () => {
  await browser?.close();
  if (child?.pid && child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // the group is gone already
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

const keyOf = (name: string) =>
  output.match(new RegExp(`AccessChannel\\s+capstan-demo/${name} .*: (cap_chat_\\S+)`))?.[1] as string;

describe("npm start, running", () => {
  it("calls out an expired key and one expiring soon, and the expired one is refused", async () => {
    expect(output).toMatch(
      /WARNING: the key of AccessChannel capstan-demo\/expired EXPIRED at 2026-01-01T00:00:00Z: every request with it is answered 401\. Change spec\.expiresAt in /,
    );
    expect(output).toMatch(/WARNING: the key of AccessChannel capstan-demo\/soon expires in 3 days \(/);
    await expect(chat(keyOf("expired"), "hello")).rejects.toMatchObject({ status: 401 });
    expect((await chat(keyOf("soon"), "What is the default rate limit?")).object).toBe("chat.completion");
  });

  it("applies a saved change: a new document is searchable, a new channel's key answers", async () => {
    const from = output.length;
    const kbFile = join(resources, "knowledge-base.yaml");
    const kb = readFileSync(kbFile, "utf8").replace(
      "    - name: Getting started guide",
      "    - name: Office hours\n      text: |\n        The support desk answers tickets from nine to five, Central European Time, Monday to Friday.\n" +
        "    - name: Getting started guide",
    );
    writeFileSync(kbFile, kb);
    await waitFor(/Knowledge base kb_product_docs: 11 documents[\s\S]*Applied: the gateway and search/, 120_000, from);
    const second = output.length;
    writeFileSync(join(resources, "new-channel.yaml"), channel("fresh", "2030-01-01T00:00:00Z"));
    await waitFor(/Applied: the gateway and search serve the new resources\./, 60_000, second);
    const searchKey = output.match(/SearchKey\s+\S+ .*: (cap_srch_\S+)/)?.[1] as string;
    const res = await fetch(`${search}/v1/rag/search`, {
      method: "POST",
      headers: { authorization: `Bearer ${searchKey}`, "content-type": "application/json" },
      body: JSON.stringify({ knowledgeIds: ["kb_product_docs"], text: "When is the support desk open?" }),
    });
    const body = (await res.json()) as { data: { docsName: string }[] };
    expect(body.data[0]?.docsName).toBe("Office hours");
    const fresh = output.slice(from).match(/new key AccessChannel capstan-demo\/fresh .*: (cap_chat_\S+)/)?.[1];
    expect(fresh).toBeDefined();
    // The gateway reloads the state folder the launcher rewrote; give its watch a moment.
    let answered: unknown;
    for (let i = 0; i < 50 && !answered; i++) {
      answered = await chat(fresh as string, "When is the support desk open?").catch(() => undefined);
      if (!answered) await new Promise((r) => setTimeout(r, 100));
    }
    expect(answered).toMatchObject({ object: "chat.completion" });
  });

  it("prints the console's address and admin token; the console writes a channel, a search key and an upload into the folder", async () => {
    const url = output.match(/Console: +(http:\/\/127\.0\.0\.1:\d+) +\(writes into /)?.[1] as string;
    const token = output.match(/ {2}admin token: (cap_adm_\S+)/)?.[1] as string;
    expect(url).toBeDefined();
    expect(token).toBeDefined();
    browser = await launchChromium();
    const page = await browser.newPage();
    await page.goto(url);
    await page.getByLabel("Token").fill("not-the-admin-token");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("not the admin token");
    await signIn(page, url, token);
    await page.getByRole("button", { name: "New channel" }).click();
    await page.getByLabel("Resource name").fill("from-console");
    await page.getByLabel("Channel name").fill("Made in the console");
    await page.getByLabel("Agent").selectOption("support-assistant");
    await page.getByRole("button", { name: "Create channel" }).click();
    await page.getByRole("heading", { name: "Made in the console" }).waitFor();
    const written = readFileSync(join(resources, "accesschannel-capstan-demo-from-console.yaml"), "utf8");
    expect(written).toContain("kind: AccessChannel");
    expect(written).toContain("channelName: Made in the console");
    // The launcher issues its key, as the operator would; Add key shows it once and the gateway takes it.
    await page.getByRole("button", { name: "Add key" }).click();
    const shown = page.getByTestId("key-value");
    await shown.waitFor({ timeout: 60_000 });
    const key = (await shown.textContent()) ?? "";
    expect(key).toMatch(/^cap_chat_/);
    let answered: unknown;
    for (let i = 0; i < 50 && !answered; i++) {
      answered = await chat(key, "What is the default rate limit?").catch(() => undefined);
      if (!answered) await new Promise((r) => setTimeout(r, 100));
    }
    expect(answered).toMatchObject({ object: "chat.completion" });

    // A search key made in the console (the example's is IP-restricted, which try a search does
    // not use) is issued by the launcher; an upload becomes an inline source in the folder's YAML,
    // which the launcher ingests; the console's try a search finds it.
    let from = output.length;
    await page.goto(`${url}/#/search-keys`);
    await page.getByRole("button", { name: "New search key" }).click();
    await page.getByLabel("Resource name").fill("console-search");
    await page.getByLabel("Key name").fill("Console search");
    await page.getByLabel("Scope: knowledge bases").selectOption(["kb_product_docs"]);
    await page.getByRole("button", { name: "Create search key" }).click();
    await waitFor(
      /new key SearchKey\s+capstan-demo\/console-search [\s\S]*Applied: the gateway and search/,
      60_000,
      from,
    );
    from = output.length;
    await page.goto(`${url}/#/knowledge/product-docs`);
    await page.getByLabel("Document (Markdown, text, HTML or PDF)").setInputFiles({
      name: "office.md",
      mimeType: "text/markdown",
      buffer: Buffer.from("# The office\n\nThe office dog is called Biscuit and sleeps under the stairs.\n"),
    });
    await page.getByRole("button", { name: "Upload" }).click();
    await waitFor(/Knowledge base kb_product_docs: \d+ documents[\s\S]*Applied: the gateway and search/, 120_000, from);
    expect(readFileSync(join(resources, "knowledge-base.yaml"), "utf8")).toContain("Biscuit");
    await trySearchFinds(page, "What is the office dog called?", "Biscuit");
    await page.close();
  }, 300_000);

  it("says why a folder that does not parse is not applied, and keeps serving", async () => {
    const from = output.length;
    writeFileSync(
      join(resources, "broken.yaml"),
      channel("broken", "2030-01-01T00:00:00Z").replace("  channelName: broken\n", ""),
    );
    const m = await waitFor(
      /Resources in \S+ not applied: ([\s\S]*?)\. The previous resources keep serving\./,
      30_000,
      from,
    );
    expect(m[1]).toMatch(/broken\.yaml: AccessChannel capstan-demo\/broken: spec\.channelName/);
    expect((await chat(keyOf("soon"), "What is the default rate limit?")).object).toBe("chat.completion");
    rmSync(join(resources, "broken.yaml"));
    await waitFor(/read fine again; nothing new to apply/, 30_000, from);
  });

  it("reports a service that exits with status 0, and one killed, and starts each again", async () => {
    const from = output.length;
    process.kill(childPid("gateway"), "SIGTERM");
    await waitFor(/gateway exited with status 0 without being asked to stop; restarting it in 0\.2 s/, 30_000, from);
    // A restart loads the service again: minutes on a loaded two-core machine.
    await waitFor(/gateway is back: /, 280_000, from);
    process.kill(childPid("search"), "SIGKILL");
    await waitFor(
      /search exited with signal SIGKILL without being asked to stop; restarting it in 0\.2 s/,
      30_000,
      from,
    );
    await waitFor(/search is back: /, 280_000, from);
    expect((await chat(keyOf("soon"), "What is the default rate limit?")).choices[0]?.message.content).toMatch(/100/);
  }, 600_000);

  it("stops every service on one Ctrl-C, one line per service", async () => {
    const pids = [childPid("gateway"), childPid("search")];
    const from = output.length;
    const exited = new Promise<[number | null, string | null]>((r) =>
      child.once("exit", (code, signal) => r([code, signal])),
    );
    process.kill(-(child.pid as number), "SIGINT");
    // npm, once its script has exited, re-raises the SIGINT on itself (its documented behaviour).
    expect(await exited).toEqual([null, "SIGINT"]);
    const after = output.slice(from);
    expect(after).not.toMatch(/exited/);
    const lines = after.split("\n").filter((l) => / stopped \(/.test(l));
    expect(lines.map((l) => l.split(" ")[0]).sort()).toEqual(["console", "gateway", "search"]);
    for (const l of lines) expect(l).toMatch(/stopped \(status 0, /);
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
  });
});
