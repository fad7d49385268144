// The shared error installer, tested once: each Fastify refusal reaches the package's shape as
// the refusal it is, a known path with the wrong method is a 405 with Allow, the package's own
// errors pass through, and anything else is its 500 (logged, no detail).
import { afterEach, describe, expect, it } from "vitest";
import { buildBaseApp } from "./http.ts";
import { type ErrorShape, installErrorHandling, type Refusal } from "./http-errors.ts";
import { createRegistry } from "./metrics.ts";

class Own extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string) {
    super(code);
    this.status = status;
    this.code = code;
  }
}

const shape: ErrorShape<Own | { status: number; code: string; refusal?: Refusal }> = {
  own: (err) => (err instanceof Own ? err : undefined),
  refusal: (r) => ({ status: r.status, code: `refused_${r.kind}`, refusal: r }),
  internal: () => ({ status: 500, code: "internal" }),
  status: (e) => e.status,
  send: (reply, e) =>
    reply.code(e.status).send({ code: e.code, ...("refusal" in e && e.refusal ? { refusal: e.refusal } : {}) }),
};

let app: ReturnType<typeof buildBaseApp> | undefined;
afterEach(async () => {
  await app?.close();
});

async function started() {
  app = buildBaseApp({ service: "t", registry: createRegistry({ defaultMetrics: false }), bodyLimit: 64 });
  installErrorHandling(app, shape);
  app.post("/things", async () => ({ ok: true }));
  app.get("/own", async () => {
    throw new Own(409, "mine");
  });
  app.get("/boom", async () => {
    throw new Error("secret internals");
  });
  await app.ready();
  return app;
}

describe("the shared error installer", () => {
  it("names each refusal for the package", async () => {
    const a = await started();
    const post = (payload: string, type?: string) =>
      a.inject({ method: "POST", url: "/things", payload, headers: type ? { "content-type": type } : {} });
    const large = await post(JSON.stringify({ pad: "x".repeat(100) }), "application/json");
    expect([large.statusCode, large.json()]).toEqual([
      413,
      { code: "refused_too_large", refusal: { kind: "too_large", status: 413, limit: 64 } },
    ]);
    const media = await post("a=1", "application/x-www-form-urlencoded");
    expect(media.json()).toMatchObject({
      code: "refused_media_type",
      refusal: { got: "application/x-www-form-urlencoded" },
    });
    expect(media.statusCode).toBe(415);
    const json = await post("{nope", "application/json");
    expect([json.statusCode, json.json().code]).toEqual([400, "refused_bad_json"]);
    const wrongMethod = await a.inject({ method: "DELETE", url: "/things?x=1" });
    expect(wrongMethod.statusCode).toBe(405);
    expect(wrongMethod.headers.allow).toBe("POST");
    expect(wrongMethod.json().refusal).toEqual({
      kind: "method_not_allowed",
      status: 405,
      method: "DELETE",
      url: "/things",
      allow: ["POST"],
    });
    const unknown = await a.inject({ method: "GET", url: "/nowhere" });
    expect([unknown.statusCode, unknown.json().code]).toEqual([404, "refused_not_found"]);
  });

  it("passes the package's own errors through and answers anything else as its 500, without detail", async () => {
    const a = await started();
    const own = await a.inject({ method: "GET", url: "/own" });
    expect([own.statusCode, own.json()]).toEqual([409, { code: "mine" }]);
    const boom = await a.inject({ method: "GET", url: "/boom" });
    expect([boom.statusCode, boom.json()]).toEqual([500, { code: "internal" }]);
    expect(boom.body).not.toContain("secret");
  });
});
