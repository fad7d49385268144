// Uploads carried across an embedding-model change, on the real search service with each store
// (embedded, and the run's real Qdrant): documents uploaded through the public API before the
// build are copied into the new model's vector set before the switch, their chunk texts embedded
// again by the new model, their metadata kept; an upload or a delete made during the build, or
// while a copy is being embedded, wins over the copy; a repeated carry copies nothing. The new
// model is an OpenAI-compatible provider on loopback backed by the real local model
// (second-model.ts). The operator's side (it calls the carry before its switch):
// test/operator/uploads-model-change.test.ts.
import { SearchClient } from "@capstan/shared/clients/search-client";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { dropCollections, qdrantPrefix } from "../ground/qdrant.ts";
import { call, INTERNAL_TOKEN, kbPath, knowledgeBase, type Running, searchKey, startSearch } from "./helpers.ts";
import { type SecondModel, startSecondModel } from "./second-model.ts";

const KEY = "cap_srch_carry_writer";
const KBS = ["carry", "race_upload", "race_delete"];
const ref = (name: string) => ({ namespace: "default", knowledgeId: `kb_${name}` });

const VACATION = [
  "# Vacation",
  "Everyone gets twenty-eight days of paid vacation per year, taken in blocks of at least half a day.",
  "Unused vacation days carry over to the next year until the end of March, then they expire.",
  "Vacation is requested in the staff portal at least two weeks ahead and approved by the team lead.",
].join("\n\n");
const PARKING =
  "<html><head><title>Parking rules</title></head><body><p>Bicycles are parked in the courtyard rack behind the kitchen.</p></body></html>";

const stores = [
  { name: "embedded store", config: () => ({}), cleanup: async () => {} },
  {
    name: "real Qdrant server",
    config: () => ({ qdrant: { url: inject("qdrantUrl"), collectionPrefix: qdrantPrefix("carry") } }),
    cleanup: () => dropCollections(inject("qdrantUrl"), qdrantPrefix("carry")),
  },
];

interface Listed {
  name: string;
  chunks: number;
  format: string;
  title?: string;
  uploadedAt?: string;
}
interface Hit {
  docsName: string;
  text: string;
}

describe.each(stores)("carrying uploads across a model change: $name", (store) => {
  let s: Running;
  let client: SearchClient;
  let second: SecondModel;

  beforeAll(async () => {
    second = await startSecondModel(`carry-embed-${store.name.split(" ")[0]}`);
    s = await startSearch({
      kbs: KBS.map((name) => knowledgeBase(name, { chunking: { size: 200, overlap: 20 } })),
      keys: [searchKey("carry", KEY, { knowledgeIds: KBS.map((n) => `kb_${n}`), permissions: ["read", "write"] })],
      moreEmbedders: [second.embedder],
      config: store.config(),
    });
    client = new SearchClient({ baseURL: s.url, internalURL: s.internalUrl, token: INTERNAL_TOKEN, timeoutMs: 60_000 });
  });
  afterAll(async () => {
    await s?.close();
    await second?.embedder.close();
    await second?.close();
    await store.cleanup();
  });

  const upload = async (kb: string, name: string, type: string, body: string) => {
    const res = await fetch(`${s.url}/v1/knowledge-bases/kb_${kb}/documents/${encodeURIComponent(name)}`, {
      method: "PUT",
      headers: { authorization: `Bearer ${KEY}`, "content-type": type },
      body,
    });
    expect(res.status, await res.clone().text()).toBe(200);
  };
  const remove = (kb: string, name: string) =>
    call<{ deleted: number }>(s.url, `/v1/knowledge-bases/kb_${kb}/documents/${name}`, {
      method: "DELETE",
      token: KEY,
    });
  const list = async (kb: string) =>
    (
      await call<{ documents: Listed[]; uploaded: unknown; total: unknown }>(
        s.url,
        `/v1/knowledge-bases/kb_${kb}/documents`,
        {
          method: "GET",
          token: KEY,
        },
      )
    ).body.data;
  const search = async (kb: string, text: string) =>
    (
      await call<Hit[]>(s.url, "/v1/rag/search", {
        token: KEY,
        body: { knowledgeIds: [`kb_${kb}`], text, minSimilarity: 0 },
      })
    ).body.data ?? [];
  const toModelB = (kb: string) => client.ensureKnowledgeBase(ref(kb), { embedding: second.spec });

  it("copies the uploads made before the build, re-embedded with the new model, metadata kept", async () => {
    await client.ensureKnowledgeBase(ref("carry"));
    const source = { docsName: "Opening hours", text: "The office opens at nine." };
    await client.upsertDocument(ref("carry"), "doc_source", source);
    await upload("carry", "vacation.md", "text/markdown", VACATION);
    await upload("carry", "parking.html", "text/html", PARKING);
    await upload("carry", "wifi.txt", "text/plain", "The guest wifi password is printed on the reception desk card.");
    await upload("carry", "gone.md", "text/markdown", "# Gone\n\nThe old coffee machine stands on the third floor.");
    const before = await list("carry");
    const vacation = before?.documents.find((d) => d.name === "vacation.md");
    expect(vacation?.chunks).toBeGreaterThan(1);

    const building = await toModelB("carry");
    expect(building.building).toMatchObject({ model: second.name, documents: 0 });
    await client.upsertDocument(ref("carry"), "doc_source", source); // the sources, as the operator does
    // During the build: a delete (from both vector sets) and a new version of an upload (to the new one).
    expect((await remove("carry", "gone.md")).body.data?.deleted).toBe(1);
    await upload("carry", "wifi.txt", "text/plain", "The guest wifi password changed: ask at the reception desk.");

    const inputsBefore = second.inputs.length;
    // One page by hand: one upload handled, the next page's start returned.
    const first = await call<{ uploads: number; carried: number; chunks: number; next?: string }>(
      s.internalUrl,
      `${kbPath("kb_carry")}/carry-uploads`,
      { token: INTERNAL_TOKEN, body: { model: second.name, limit: 1 } },
    );
    expect(first.body.data).toMatchObject({ knowledgeId: "kb_carry", model: second.name, uploads: 1 });
    expect(typeof first.body.data?.next).toBe("string");
    // Then every page through the client: the upload copied above is skipped, not copied again.
    const rest = await client.carryUploads(ref("carry"), second.name, 1);
    expect(rest.uploads).toBe(3);
    expect({
      carried: rest.carried + (first.body.data?.carried ?? 0),
      chunks: rest.chunks + (first.body.data?.chunks ?? 0),
    }).toEqual({
      carried: 2,
      chunks: (vacation?.chunks ?? 0) + 1,
    });
    // Their chunk texts went through the new model (not their vectors copied).
    const embedded = second.inputs.slice(inputsBefore);
    expect(embedded.some((t) => t.includes("twenty-eight days"))).toBe(true);
    expect(embedded.some((t) => t.includes("courtyard rack"))).toBe(true);
    expect(embedded.some((t) => t.includes("guest wifi") || t.includes("coffee"))).toBe(false);
    // A retried carry copies nothing again.
    expect(await client.carryUploads(ref("carry"), second.name, 2)).toEqual({ uploads: 3, carried: 0, chunks: 0 });

    expect(await client.switchKnowledgeBase(ref("carry"), second.name)).toMatchObject({ switched: true });
    const after = await list("carry");
    expect(after?.documents.map((d) => d.name)).toEqual(["parking.html", "vacation.md", "wifi.txt"]);
    for (const name of ["parking.html", "vacation.md"]) {
      // format, title, uploadedAt and chunks exactly as uploaded
      expect(after?.documents.find((d) => d.name === name)).toEqual(before?.documents.find((d) => d.name === name));
    }
    expect(after?.documents.find((d) => d.name === "parking.html")).toMatchObject({
      format: "html",
      title: "Parking rules",
    });
    const wifi = after?.documents.find((d) => d.name === "wifi.txt");
    expect(
      wifi?.uploadedAt && wifi.uploadedAt > (before?.documents.find((d) => d.name === "wifi.txt")?.uploadedAt ?? ""),
    ).toBe(true);
    const chunks = after?.documents.reduce((n, d) => n + d.chunks, 0);
    expect(after).toMatchObject({ uploaded: { documents: 3, chunks }, total: { documents: 4 } });
    expect(await client.getKnowledgeBase(ref("carry"))).toMatchObject({
      model: second.name,
      documents: 4,
      uploaded: { documents: 3, chunks },
    });

    // Searched with the new model: the question goes to it, and the uploads answer.
    const questions = second.inputs.length;
    expect((await search("carry", "Where do I park my bicycle?"))[0]?.docsName).toBe("parking.html");
    expect((await search("carry", "How many vacation days do I get?"))[0]?.docsName).toBe("vacation.md");
    const wifiHit = (await search("carry", "What is the guest wifi password?"))[0];
    expect(wifiHit).toMatchObject({ docsName: "wifi.txt", text: expect.stringContaining("changed") });
    expect((await search("carry", "Where is the coffee machine?")).map((h) => h.docsName)).not.toContain("gone.md");
    expect(second.inputs.length).toBeGreaterThan(questions);
    // After the switch, asked again (a lost answer): nothing to do.
    expect(await client.carryUploads(ref("carry"), second.name)).toEqual({ uploads: 0, carried: 0, chunks: 0 });
  });

  it("lets an upload made while a copy is being embedded win over the copy", async () => {
    await client.ensureKnowledgeBase(ref("race_upload"));
    await upload("race_upload", "menu.md", "text/markdown", "# Menu\n\nThe canteen serves lentil soup on Mondays.");
    await toModelB("race_upload");
    const hold = second.hold((t) => t.includes("lentil soup"));
    const carrying = client.carryUploads(ref("race_upload"), second.name);
    await hold.held; // the copy of menu.md is in the new model's embedding
    await upload("race_upload", "menu.md", "text/markdown", "# Menu\n\nThe canteen now serves tomato soup on Mondays.");
    hold.release();
    expect(await carrying).toEqual({ uploads: 1, carried: 0, chunks: 0 });
    await client.switchKnowledgeBase(ref("race_upload"), second.name);
    const hits = await search("race_upload", "What soup is served on Mondays?");
    expect(hits.map((h) => h.text)).toEqual([expect.stringContaining("tomato soup")]);
  });

  it("does not bring back a document deleted while its copy is being embedded", async () => {
    await client.ensureKnowledgeBase(ref("race_delete"));
    await upload("race_delete", "old.md", "text/markdown", "# Old\n\nThe fax machine is in room 12.");
    await upload("race_delete", "kept.md", "text/markdown", "# Kept\n\nThe printer is in room 14.");
    await toModelB("race_delete");
    const hold = second.hold((t) => t.includes("fax machine"));
    const carrying = client.carryUploads(ref("race_delete"), second.name);
    await hold.held;
    expect((await remove("race_delete", "old.md")).body.data?.deleted).toBe(1);
    hold.release();
    expect(await carrying).toMatchObject({ carried: 1, chunks: 1 }); // kept.md only
    expect((await client.getKnowledgeBase(ref("race_delete")))?.building).toMatchObject({ documents: 1 });
    await client.switchKnowledgeBase(ref("race_delete"), second.name);
    expect((await list("race_delete"))?.documents.map((d) => d.name)).toEqual(["kept.md"]);
  });

  it("answers bad calls in the error envelope", async () => {
    const post = (kb: string, body: unknown, token = INTERNAL_TOKEN) =>
      call(s.internalUrl, `${kbPath(kb)}/carry-uploads`, { token, body });
    const bad = await post("kb_carry", { limit: 0 });
    expect(bad.status).toBe(400);
    expect(bad.headers.get("x-capstan-error")).toBe("SEARCH_ERR_BODY_INVALID");
    expect(bad.body).toEqual({ code: 400, message: "invalid request body: limit: must be at least 1", data: null });
    expect((await post("kb_carry", { model: 7 })).status).toBe(400);
    const wrong = await post("kb_carry", { model: "local:all-MiniLM-L6-v2" });
    expect(wrong.status).toBe(404);
    expect(wrong.body).toEqual({
      code: 404,
      message: "not found: no vector set of model local:all-MiniLM-L6-v2 being built for kb_carry",
      data: null,
    });
    expect((await post("kb_never", {})).status).toBe(404);
    expect((await post("kb_carry", {}, "wrong-token-0123456789")).status).toBe(401);
  });
});
