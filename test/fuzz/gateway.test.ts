// schemathesis against the gateway process (src/main.ts) as deployed: resources from YAML files,
// QPM limits and history in the test ground's Redis, a real channel key, and an Agent whose
// provider is the fake OpenAI server (the real wire protocol, echoing). Every case schemathesis
// generates from the published /openapi.json must answer without a 5xx, within the request
// timeout, with a status, content type and body the document declares.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateKey, hashKey } from "@capstan/shared";
import { afterAll, beforeAll, expect, inject } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../gateway/fake-openai.ts";
import { TEST_PROVIDER_HOSTS } from "../gateway/helpers.ts";
import type { ManagedProcess } from "../ground/process.ts";
import { startService } from "./process.ts";
import { fuzzTests } from "./suite.ts";

const dir = mkdtempSync(join(tmpdir(), "capstan-fuzz-gw-"));
const ns = `fuzz-${process.pid}-${Date.now().toString(36)}`;
const key = generateKey("chat");
let provider: FakeOpenAI;
let proc: ManagedProcess;
let origin: string;

beforeAll(async () => {
  provider = await startFakeOpenAI();
  // A QPM no run of this file reaches: the limiter's 429 is documented, but the cases should
  // reach the handlers.
  writeFileSync(
    join(dir, "resources.yaml"),
    [
      "apiVersion: capstan.dev/v1alpha1",
      "kind: Agent",
      `metadata: {name: echo, namespace: ${ns}}`,
      `spec: {provider: {baseURL: "${provider.baseURL}", model: echo}}`,
      "---",
      "apiVersion: capstan.dev/v1alpha1",
      "kind: AccessChannel",
      `metadata: {name: fuzz, namespace: ${ns}}`,
      "spec: {channelName: fuzz, agentRef: {name: echo}, qpm: 1000000, keepHistory: true}",
      `status: {keyHash: "${hashKey(key)}"}`,
      "",
    ].join("\n"),
  );
  const started = await startService(
    "gateway",
    // The fake provider listens on loopback, which the egress policy refuses unless allowed.
    {
      CAPSTAN_RESOURCES_DIR: dir,
      REDIS_URL: inject("redisUrl"),
      CAPSTAN_EGRESS_ALLOWED_HOSTS: TEST_PROVIDER_HOSTS.join(","),
    },
    async ({ origin }) =>
      (await fetch(`${origin}/api/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status === 200,
  );
  ({ proc, origin } = started);
}, 150_000);

afterAll(async () => {
  await proc?.stop();
  await provider?.close();
  rmSync(dir, { recursive: true, force: true });
});

fuzzTests(
  "gateway",
  () => ({ origin, key, proc }),
  { maxExamples: 25, hardTimeoutS: 150, requestTimeoutS: 15 },
  () => {
    // It did reach the provider: the cases were not all refused before the handler.
    expect(provider.calls.length).toBeGreaterThan(0);
  },
);
