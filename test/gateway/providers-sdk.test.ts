// Provider kinds azure and anthropic through the gateway, driven by the openai-node and
// openai-python SDKs unchanged: a completion, a stream (with usage), a tool call (answer and
// stream) and the tool result sent back, against fakes that speak Azure OpenAI's and Anthropic's
// documented wire formats (fake-openai.ts's Azure path, fake-anthropic.ts). Also: what reached the
// provider (URL, headers, the translated Messages body) and its errors mapped to OpenAI's.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeAnthropic, startFakeAnthropic } from "./fake-anthropic.ts";
import { type FakeOpenAI, startFakeOpenAI } from "./fake-openai.ts";
import { addResources, client, emptyView, type RunningGateway, startGateway, uniqueNamespace } from "./helpers.ts";

/** Pinned in scripts/setup.d/66-openai-python.sh; keep the two in step. */
const PYTHON_SDK = "3.57.0";
const python = join(
  process.env.CAPSTAN_CACHE ?? join(homedir(), ".cache/capstan"),
  "openai-python",
  PYTHON_SDK,
  "bin/python",
);
const KEY = "sk-provider-test-key";

let azure: FakeOpenAI;
let anthropic: FakeAnthropic;
let gw: RunningGateway;
let keys: Record<string, string>;
let secretsDir: string;
const ns = uniqueNamespace("prov");
const view = emptyView();
const keyRef = { name: "provider", key: "apiKey" };

beforeAll(async () => {
  azure = await startFakeOpenAI();
  anthropic = await startFakeAnthropic({ apiKey: KEY });
  secretsDir = mkdtempSync(join(tmpdir(), "gw-prov-"));
  mkdirSync(join(secretsDir, ns, keyRef.name), { recursive: true });
  writeFileSync(join(secretsDir, ns, keyRef.name, keyRef.key), KEY);
  const agents = [
    {
      name: "azure",
      spec: {
        systemPrompt: "You are terse.",
        provider: {
          kind: "azure",
          baseURL: azure.url,
          model: "gpt-4o",
          deployment: "echo-dep",
          apiKeySecretRef: keyRef,
        },
      },
    },
    {
      name: "claude",
      spec: {
        systemPrompt: "You are terse.",
        provider: { kind: "anthropic", baseURL: anthropic.baseURL, model: "claude-test", apiKeySecretRef: keyRef },
      },
    },
    {
      name: "claude-429",
      spec: {
        provider: {
          kind: "anthropic",
          baseURL: anthropic.baseURL,
          model: "status:429",
          maxRetries: 0,
          apiKeySecretRef: keyRef,
        },
      },
    },
    {
      name: "claude-then-azure",
      spec: {
        upstreams: [
          { kind: "anthropic", baseURL: anthropic.baseURL, model: "status:529", apiKeySecretRef: keyRef },
          { kind: "azure", baseURL: azure.url, model: "gpt-4o", deployment: "fallback-dep", apiKeySecretRef: keyRef },
        ],
      },
    },
  ];
  keys = addResources(
    view,
    ns,
    agents.map((a) => ({ name: a.name, agent: a.name, qpm: 10_000 })),
    agents,
  );
  gw = await startGateway({ redisUrl: inject("redisUrl"), secretsDir }, { view });
});

afterAll(async () => {
  await gw?.close();
  await azure?.close();
  await anthropic?.close();
  rmSync(secretsDir, { recursive: true, force: true });
});

const tools: OpenAI.ChatCompletionFunctionTool[] = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "The weather in a city",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
  },
];

/** The openai-node SDK's calls, the same as sdk_calls.py makes. */
async function nodeCalls(channel: string) {
  const sdk = client(gw.url, keys[channel] as string);
  const completion = await sdk.chat.completions.create({
    model: "m",
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "hello node" },
    ],
  });
  let stream = "";
  let streamUsage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of await sdk.chat.completions.create({
    model: "m",
    messages: [{ role: "user", content: "stream node" }],
    stream: true,
    stream_options: { include_usage: true },
  })) {
    stream += chunk.choices[0]?.delta.content ?? "";
    if (chunk.usage) streamUsage = chunk.usage;
  }
  const call = await sdk.chat.completions.create({
    model: "m",
    messages: [{ role: "user", content: "weather in Paris?" }],
    tools,
    tool_choice: "auto",
  });
  const toolCall = call.choices[0]?.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
  const runner = sdk.chat.completions.stream({ model: "m", messages: [{ role: "user", content: "weather?" }], tools });
  const final = await runner.finalChatCompletion();
  const streamed = final.choices[0]?.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
  const answer = await sdk.chat.completions.create({
    model: "m",
    messages: [
      { role: "user", content: "weather in Paris?" },
      { role: "assistant", content: null, tool_calls: [toolCall] },
      { role: "tool", tool_call_id: toolCall.id, content: "sunny" },
    ],
    tools,
  });
  return {
    completion: completion.choices[0]?.message.content,
    usage: completion.usage,
    stream,
    streamUsage,
    toolCall: {
      finish: call.choices[0]?.finish_reason,
      name: toolCall.function.name,
      arguments: JSON.parse(toolCall.function.arguments),
    },
    streamToolCall: { name: streamed.function.name, arguments: JSON.parse(streamed.function.arguments) },
    afterTool: answer.choices[0]?.message.content,
  };
}

async function pythonCalls(channel: string) {
  if (!existsSync(python)) {
    throw new Error(
      `openai-python ${PYTHON_SDK} is not installed at ${python}: run scripts/setup.d/66-openai-python.sh`,
    );
  }
  const { stdout } = await promisify(execFile)(
    python,
    [join(import.meta.dirname, "sdk_calls.py"), `${gw.url}/api/v1`, keys[channel] as string],
    { timeout: 60_000 },
  );
  return JSON.parse(stdout) as Record<string, unknown>;
}

function expectAnswers(out: Record<string, unknown>, sdk: "node" | "python") {
  expect(out.completion).toBe(`echo: hello ${sdk}`);
  expect(out.stream).toBe(`echo: stream ${sdk}`);
  expect(out.usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) });
  expect(out.streamUsage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) });
  expect(out.toolCall).toEqual({ finish: "tool_calls", name: "get_weather", arguments: { city: "Paris" } });
  expect(out.streamToolCall).toEqual({ name: "get_weather", arguments: { city: "Paris" } });
  expect(out.afterTool).toBe("tool said: sunny");
}

describe.each(["node", "python"] as const)("the openai-%s SDK", (sdk) => {
  const run = sdk === "node" ? nodeCalls : pythonCalls;

  it("reaches Azure OpenAI: completion, stream, tool call, tool result", async () => {
    const before = azure.calls.length;
    expectAnswers(await run("azure"), sdk);
    const calls = azure.calls.slice(before);
    expect(calls).toHaveLength(5);
    for (const c of calls) {
      expect(c.azure).toEqual({ deployment: "echo-dep", apiVersion: "2024-10-21" });
      expect(c.headers["api-key"]).toBe(KEY);
      expect(c.headers.authorization).toBeUndefined();
    }
  });

  it("reaches Anthropic's Messages API: completion, stream, tool call, tool result", async () => {
    const before = anthropic.calls.length;
    expectAnswers(await run("claude"), sdk);
    const calls = anthropic.calls.slice(before);
    expect(calls).toHaveLength(5);
    for (const c of calls) {
      expect(c.headers["x-api-key"]).toBe(KEY);
      expect(c.headers["anthropic-version"]).toBe("2023-06-01");
      expect(c.body.model).toBe("claude-test");
      expect(c.body.max_tokens).toBe(4096);
    }
    // System prompts become `system`; tools carry input_schema; the tool result a tool_result block.
    expect(calls[0]?.body.system).toBe("You are terse.\n\nBe brief.");
    expect(calls[2]?.body.tools).toEqual([
      { name: "get_weather", description: "The weather in a city", input_schema: tools[0]?.function.parameters },
    ]);
    expect(calls[4]?.body.messages.at(-1)).toEqual({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: expect.stringMatching(/^toolu_/), content: "sunny" }],
    });
  });
});

describe("provider errors", () => {
  it("Anthropic's 429 rate_limit_error is the gateway's 429 (OpenAI shape)", async () => {
    const err = await client(gw.url, keys["claude-429"] as string)
      .chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe("upstream_rate_limited");
  });

  it("Anthropic overloaded (529) falls to the Azure upstream", async () => {
    const res = await client(gw.url, keys["claude-then-azure"] as string).chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "fall over" }],
    });
    expect(res.choices[0]?.message.content).toBe("echo: fall over");
    expect(azure.calls.at(-1)?.azure?.deployment).toBe("fallback-dep");
  });
});
