// The gateway's HTTP details, one test each: 415 naming the accepted media type (and telling a
// JSON body sent as a form that only its header is wrong), a __proto__ key named as such rather
// than called invalid JSON, 405 with Allow for a known path with the wrong method, the request id on
// a 404 or 405 under /api/v1, and `created`
// of GET /api/v1/models a real timestamp also for an Agent read from a file.
import { generateKey, hashKey } from "@capstan/shared";
import { parseResource } from "@capstan/shared/api";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addResources, client, emptyView, type RunningGateway, startGateway, uniqueNamespace } from "./helpers.ts";

const view = emptyView();
const ns = uniqueNamespace("http");
let keys: Record<string, string>;
let fileKey: string;
let gw: RunningGateway;
const chat = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] });

beforeAll(async () => {
  keys = addResources(view, ns, [{ name: "c", agent: "offline" }], [{ name: "offline", spec: {} }]);
  // An Agent as a YAML file gives it: no creationTimestamp.
  fileKey = generateKey("chat");
  view.upsert(
    parseResource({
      apiVersion: "capstan.dev/v1alpha1",
      kind: "Agent",
      metadata: { name: "from-file", namespace: ns },
      spec: {},
    }),
  );
  view.upsert(
    parseResource({
      apiVersion: "capstan.dev/v1alpha1",
      kind: "AccessChannel",
      metadata: { name: "file", namespace: ns },
      spec: { channelName: "file", agentRef: { name: "from-file" } },
      status: { keyHash: hashKey(fileKey) },
    }),
  );
  gw = await startGateway({}, { view });
});
afterAll(async () => {
  await gw?.close();
});

function send(method: string, path: string, body?: string, contentType?: string): Promise<Response> {
  return fetch(`${gw.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${keys.c}`, ...(contentType ? { "content-type": contentType } : {}) },
    ...(body !== undefined ? { body } : {}),
  });
}

describe("gateway HTTP semantics", () => {
  it("415 for a form-encoded body, naming application/json and saying the body itself is JSON", async () => {
    const res = await send("POST", "/api/v1/chat/completions", chat, "application/x-www-form-urlencoded");
    expect(res.status).toBe(415);
    const { error } = await res.json();
    expect(error.code).toBe("unsupported_media_type");
    expect(error.message).toContain("'application/x-www-form-urlencoded'");
    expect(error.message).toContain("Content-Type: application/json");
    expect(error.message).toContain("The body is JSON");
    expect(error.message).not.toMatch(/not valid JSON/);
  });

  it("415 for text/plain, and a body with no content type is read as JSON", async () => {
    const plain = await send("POST", "/api/v1/chat/completions", "hello", "text/plain");
    expect(plain.status).toBe(415);
    expect((await plain.json()).error.message).not.toContain("The body is JSON");
    const untyped = await fetch(`${gw.url}/api/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${keys.c}` },
      body: new TextEncoder().encode(chat),
    });
    expect(untyped.status).toBe(200);
  });

  it("a __proto__ key is named as the problem, not called invalid JSON", async () => {
    const body = '{"model":"m","messages":[{"role":"user","content":"hi"}],"__proto__":{"x":1}}';
    const res = await send("POST", "/api/v1/chat/completions", body, "application/json");
    expect(res.status).toBe(400);
    const { error } = await res.json();
    expect(error.code).toBe("invalid_request");
    expect(error.message).toContain("'__proto__'");
    expect(error.message).not.toMatch(/not valid JSON/);
  });

  it("405 with Allow for a known path and the wrong method; 404 stays for unknown paths", async () => {
    const get = await send("GET", "/api/v1/chat/completions");
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    expect((await get.json()).error).toMatchObject({ code: "method_not_allowed", type: "invalid_request_error" });
    const post = await send("POST", "/api/v1/models/offline", "{}", "application/json");
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    expect((await send("GET", "/api/v1/nothing")).status).toBe(404);
  });

  it("a 404 or 405 under /api/v1 carries the request id, like every answer of the prefix", async () => {
    for (const [method, path, status] of [
      ["GET", "/api/v1/nothing", 404],
      ["POST", "/api/v1/chat/nothing/deeper", 404],
      ["GET", "/api/v1/chat/completions", 405],
    ] as const) {
      const res = await send(method, path);
      expect(res.status, `${method} ${path}`).toBe(status);
      expect(res.headers.get("x-request-id"), `${method} ${path}`).toMatch(/^req_[0-9a-f-]{36}$/);
      expect((await res.json()).error.code).toBe(status === 404 ? "not_found" : "method_not_allowed");
    }
    // The caller's own id, when sane, is echoed as on any other answer.
    const given = await fetch(`${gw.url}/api/v1/nothing`, { headers: { "x-request-id": "client-id-42" } });
    expect(given.status).toBe(404);
    expect(given.headers.get("x-request-id")).toBe("client-id-42");
  });

  it("GET /api/v1/models gives a real `created`, also for an Agent read from a file", async () => {
    const listed = await client(gw.url, keys.c as string).models.list();
    expect(listed.data[0]?.created).toBe(Date.parse("2026-01-01T00:00:00Z") / 1000);
    const fromFile = await client(gw.url, fileKey).models.retrieve("from-file");
    expect(fromFile.created).toBeGreaterThan(Date.parse("2026-01-01T00:00:00Z") / 1000);
    expect(Math.abs(fromFile.created - Date.now() / 1000)).toBeLessThan(600);
    const again = await client(gw.url, fileKey).models.list();
    expect(again.data[0]?.created).toBe(fromFile.created); // stable
    expect(OpenAI).toBeDefined();
  });
});
