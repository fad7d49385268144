import { describe, expect, it } from "vitest";
import { csrfMatches, MemorySessionStore } from "./sessions.ts";
import { allows } from "./user-api.ts";

const api = () => {
  const a = {
    closed: false,
    close: async () => {
      a.closed = true;
    },
  };
  return a;
};

describe("sessions", () => {
  it("end after the idle timeout and at the maximum age, closing the user's client", async () => {
    let t = 0;
    const store = new MemorySessionStore({ idleMs: 1000, maxMs: 5000 }, () => t);
    const a = api();
    const s = await store.create({ username: "u", groups: [] }, a);
    t = 900;
    expect(await store.get(s.id)).toBe(s);
    t = 1800; // 900 ms after the last use
    expect(await store.get(s.id)).toBe(s);
    t = 2801;
    expect(await store.get(s.id)).toBeUndefined();
    expect(a.closed).toBe(true);

    const b = await store.create({ username: "u", groups: [] }, api());
    for (t = 3000; t <= 8000; t += 500) await store.get(b.id);
    expect(await store.get(b.id)).toBeUndefined();
    await store.close();
  });

  it("ids and CSRF tokens are long random values; a CSRF token must match exactly", async () => {
    const store = new MemorySessionStore({ idleMs: 1000, maxMs: 5000 });
    const s = await store.create({ username: "u", groups: [] }, api());
    expect(s.id.length).toBeGreaterThanOrEqual(43);
    expect(s.csrfToken).not.toBe(s.id);
    expect(csrfMatches(s, s.csrfToken)).toBe(true);
    expect(csrfMatches(s, `${s.csrfToken}x`)).toBe(false);
    expect(csrfMatches(s, undefined)).toBe(false);
    expect(csrfMatches(s, [s.csrfToken])).toBe(false);
    await store.close();
  });
});

describe("RBAC rules as the pages read them", () => {
  it("wildcards allow, named-object rules do not grant the whole kind", () => {
    const rules = [
      { verbs: ["get", "list"], apiGroups: ["capstan.dev"], resources: ["accesschannels"] },
      { verbs: ["*"], apiGroups: ["*"], resources: ["scrapers"] },
      { verbs: ["get"], apiGroups: [""], resources: ["secrets"], resourceNames: ["one"] },
    ];
    expect(allows(rules, "capstan.dev", "accesschannels", "list")).toBe(true);
    expect(allows(rules, "capstan.dev", "accesschannels", "create")).toBe(false);
    expect(allows(rules, "capstan.dev", "scrapers", "delete")).toBe(true);
    expect(allows(rules, "", "secrets", "get")).toBe(false);
  });
});
