// The Qdrant adapter's registry on the run's real Qdrant: a read of an entry that a write
// overtakes (a search's read still on its way while the operator switches vector sets) must not
// leave the entry from before the write in the cache, where every read would find it for the
// cache's lifetime. The read's answer is held back in the test until the write is done: the
// interleaving a loaded machine produces by chance.
import { afterAll, describe, expect, inject, it } from "vitest";
import { QdrantHttp } from "../../services/search/src/store/qdrant-http.ts";
import { QdrantRegistry } from "../../services/search/src/store/qdrant-registry.ts";
import { dropCollections, qdrantPrefix } from "../ground/qdrant.ts";

const qdrantUrl = inject("qdrantUrl");
const prefix = qdrantPrefix("registry");

/** Real calls; the answer of a held "retrieve" is handed over only once release() is called. */
class HeldHttp extends QdrantHttp {
  private hold: { answered: () => void; released: Promise<void> } | undefined;
  release: () => void = () => {};

  /** Holds the next read; resolves once Qdrant has answered it (the answer then waits for release()). */
  holdNextRead(): Promise<void> {
    return new Promise((answered) => {
      this.hold = { answered, released: new Promise((r) => (this.release = r)) };
    });
  }

  override async call<T>(op: string, method: string, path: string, body?: unknown): Promise<T> {
    const hold = op === "retrieve" ? this.hold : undefined;
    if (hold) this.hold = undefined;
    const answer = await super.call<T>(op, method, path, body);
    if (hold) {
      hold.answered();
      await hold.released;
    }
    return answer;
  }
}

afterAll(() => dropCollections(qdrantUrl, prefix));

describe("the Qdrant registry's cache", () => {
  it("does not keep what a read found when a write overtook it", async () => {
    const http = new HeldHttp({ url: qdrantUrl });
    const reg = new QdrantRegistry(http, prefix, 60_000);
    const chunking = { size: 200, overlap: 20 };
    const a = { knowledgeId: "ns.kb_one", model: "local:a", dimensions: 384, chunking };
    const b = { knowledgeId: "ns.kb_one", model: "openai:b", dimensions: 512, chunking };
    await reg.put({ ...a, building: b });

    const answered = http.holdNextRead();
    const read = reg.get(a.knowledgeId, true); // reads the entry before the switch...
    await answered; // ...Qdrant has answered, the answer is on its way (held)
    await reg.put({ ...b, retired: a, retiredAt: Date.now() }); // the switch
    http.release();
    expect((await read)?.model).toBe(a.model);

    // Every later read (within the cache's 60 s) sees the switch.
    expect((await reg.get(a.knowledgeId))?.model).toBe(b.model);
    expect((await reg.get(a.knowledgeId))?.building).toBeUndefined();
  });
});
