// The README's main job, end to end: `npm start` (scripts/standalone/main.ts) on the examples,
// then a chat completion with the printed channel key through the official OpenAI SDK and a
// knowledge search with the printed search key, answered from the ingested knowledge base.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freePort } from "../ground/ports.ts";

let child: ChildProcess;
let output = "";
let gateway: string;
let search: string;
let gatewayInternal: string;

function waitForOutput(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no ${pattern} in time; output:\n${output.slice(-4000)}`)),
      timeoutMs,
    );
    const check = () => {
      const match = output.match(pattern);
      if (match) {
        clearTimeout(timer);
        child.stdout?.off("data", check);
        resolve(match);
      }
    };
    child.stdout?.on("data", check);
    child.once("exit", (code) => reject(new Error(`npm start exited with ${code}:\n${output.slice(-4000)}`)));
    check();
  });
}

beforeAll(async () => {
  const [gatewayPort, searchPort, searchInternalPort, gatewayInternalPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  gateway = `http://127.0.0.1:${gatewayPort}`;
  gatewayInternal = `http://127.0.0.1:${gatewayInternalPort}`;
  search = `http://127.0.0.1:${searchPort}`;
  child = spawn(process.execPath, ["scripts/standalone/main.ts"], {
    env: {
      ...process.env,
      CAPSTAN_STATE_DIR: mkdtempSync(join(tmpdir(), "capstan-standalone-")),
      GATEWAY_PORT: String(gatewayPort),
      SEARCH_PORT: String(searchPort),
      SEARCH_INTERNAL_PORT: String(searchInternalPort),
      GATEWAY_INTERNAL_PORT: String(gatewayInternalPort),
      REDIS_URL: inject("redisUrl"),
      CAPSTAN_SCRAPER: "off", // the example's URL source is on the internet, which this machine cannot reach
      CAPSTAN_CONSOLE: "off", // launcher.test.ts drives the console
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.on("data", (d: Buffer) => {
    output += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    output += d.toString();
  });
  await waitForOutput(/Running\. Ctrl-C stops every service\./, 240_000);
}, 300_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGINT");
    await exited;
  }
});

describe("npm start (standalone)", () => {
  it("ingests the example knowledge base and prints one key per channel and search key", () => {
    expect(output).toMatch(/Knowledge base kb_product_docs: 10 documents, \d+ chunks ingested/);
    expect(output).toMatch(/Rate limits: Redis at redis:\/\/127\.0\.0\.1:\d+/);
    expect(output).toMatch(/AccessChannel\s+capstan-demo\/website-chat .*: cap_chat_\S+/);
    expect(output).toMatch(/SearchKey\s+capstan-demo\/docs-search-backend .*: cap_srch_\S+/);
  });

  it("serves metrics on the internal ports it prints, never on the public ones", async () => {
    expect(output).toContain(`Metrics:                   ${gatewayInternal}/metrics`);
    for (const base of [gateway, search]) expect((await fetch(`${base}/metrics`)).status).toBe(404);
    expect(await (await fetch(`${gatewayInternal}/metrics`)).text()).toContain("gateway_");
  });

  it("answers a chat completion from the knowledge base with the printed key (OpenAI SDK)", async () => {
    const key = output.match(/AccessChannel\s+\S+ .*: (cap_chat_\S+)/)?.[1] as string;
    const openai = new OpenAI({ apiKey: key, baseURL: `${gateway}/api/v1`, maxRetries: 0 });
    const completion = await openai.chat.completions.create({
      model: "anything",
      messages: [{ role: "user", content: "What happens when a client exceeds the rate limit?" }],
    });
    expect(completion.object).toBe("chat.completion");
    expect(completion.choices[0]?.message.content).toMatch(/429|Retry-After/);
  });

  it("finds the right document with the printed search key", async () => {
    const key = output.match(/SearchKey\s+\S+ .*: (cap_srch_\S+)/)?.[1] as string;
    const res = await fetch(`${search}/v1/rag/search`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        knowledgeIds: ["kb_product_docs"],
        text: "when does a key stop working",
        minSimilarity: 0.2,
      }),
    });
    const body = (await res.json()) as { code: number; data: { docsName: string }[] };
    expect(res.status).toBe(200);
    expect(body.code).toBe(200);
    expect(body.data[0]?.docsName).toBe("Keys and expiry");
  });
});
