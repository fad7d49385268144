// The console's routes are schema-first (wire.ts): a request their schema refuses is answered 400
// in the console's error shape ({error: {code: "BadRequest", message}} naming the field), never a
// 500; the session is still checked first (401 before any word about the body); and the answers
// the routes send parse with the schemas the page reads them with. In process (Fastify inject) on a
// standalone console over a temporary YAML folder.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestConsole, startTestConsole } from "./test-app.ts";
import { channelRowSchema, itemsOf, knowledgeRowSchema, permissionsSchema, sessionInfoSchema } from "./wire.ts";

let app: FastifyInstance;
let cookie = "";
let csrf = "";

beforeAll(async () => {
  const started = await startTestConsole();
  ({ app, cookie, csrf } = started);
  expect(sessionInfoSchema.safeParse(started.signIn).success).toBe(true);
});

afterAll(async () => {
  await app?.close();
});

/** A signed-in request with the CSRF token, JSON body as given. */
const send = (method: "GET" | "POST" | "PATCH", url: string, payload?: unknown) =>
  app.inject({
    method,
    url,
    headers: { cookie, "x-csrf-token": csrf, ...(payload === undefined ? {} : { "content-type": "application/json" }) },
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
  });

/** The answer is a 400 in the console's error shape, its message naming `field`. */
function expectBadRequest(res: Awaited<ReturnType<typeof send>>, field: string) {
  expect(res.statusCode).toBe(400);
  expect(res.headers["cache-control"]).toBe("no-store");
  const body = res.json() as { error: { code: string; message: string } };
  expect(Object.keys(body)).toEqual(["error"]);
  expect(body.error.code).toBe("BadRequest");
  expect(body.error.message).toContain(field);
}

describe("the console's wire schemas", () => {
  it("refuse a malformed body with 400 in the console's error shape", async () => {
    // Sign-in with a token that is not a string.
    expectBadRequest(await app.inject({ method: "POST", url: "/api/session", payload: { token: 42 } }), "body.token");
    // A channel without a spec, and one whose spec is a string.
    expectBadRequest(await send("POST", "/api/namespaces/demo/accesschannels", { name: "x" }), "body.spec");
    expectBadRequest(await send("POST", "/api/namespaces/demo/searchkeys", { name: "x", spec: "nope" }), "body.spec");
    // An edit whose QPM is not a number.
    expectBadRequest(await send("PATCH", "/api/namespaces/demo/accesschannels/x", { qpm: "fast" }), "body.qpm");
    // "Try a search" with a maxResults out of range, a key request whose rotate is not a boolean.
    expectBadRequest(
      await send("POST", "/api/namespaces/demo/knowledgebases/handbook/search", { text: "hi", maxResults: 500 }),
      "body.maxResults",
    );
    expectBadRequest(await send("POST", "/api/namespaces/demo/searchkeys/x/key", { rotate: "yes" }), "body.rotate");
    // A JSON body that is not an object at all.
    expectBadRequest(await send("POST", "/api/namespaces/demo/agents/a/chat", ["hello"]), "body");
  });

  it("refuses a malformed query with 400 in the same shape", async () => {
    expectBadRequest(await send("GET", "/api/namespaces/demo/usage/hourly?hours=soon"), "querystring.hours");
  });

  it("checks the session before the body: not signed in is 401, whatever the body", async () => {
    const res = await app.inject({
      method: "POST",
      url: "/api/namespaces/demo/accesschannels",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ spec: 1 }),
    });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe("NotSignedIn");
  });

  it("refuses to start with a route under /api that declares no wire schema", async () => {
    const { app: bare } = await buildTestConsole();
    try {
      expect(() => bare.get("/api/namespaces/:ns/unschemed", async () => ({}))).toThrow(/declares no wire schema/);
    } finally {
      await bare.close();
    }
  });

  it("answers in the shapes the page parses", async () => {
    const perms = await send("GET", "/api/namespaces/demo/permissions");
    expect(permissionsSchema.parse(perms.json()).knowledgebases?.get).toBe(true);
    const kbs = itemsOf(knowledgeRowSchema).parse((await send("GET", "/api/namespaces/demo/knowledgebases")).json());
    expect(kbs.items.map((k) => k.name)).toEqual(["handbook"]);
    const channels = await send("GET", "/api/namespaces/demo/accesschannels");
    expect(itemsOf(channelRowSchema).parse(channels.json()).items).toEqual([]);
  });
});
