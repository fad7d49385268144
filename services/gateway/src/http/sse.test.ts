import { describe, expect, it } from "vitest";
import { parseSse, SSE_DONE, sseData } from "./sse.ts";

async function collect(chunks: string[]): Promise<string[]> {
  const enc = new TextEncoder();
  async function* body() {
    for (const c of chunks) yield enc.encode(c);
  }
  const out: string[] = [];
  for await (const d of parseSse(body())) out.push(d);
  return out;
}

describe("parseSse", () => {
  it("yields the data of each event", async () => {
    expect(await collect(['data: {"a":1}\n\n', "data: [DONE]\n\n"])).toEqual(['{"a":1}', "[DONE]"]);
  });

  it("handles events split across chunks, CRLF and a CRLF split in two", async () => {
    expect(await collect(["da", "ta: x\r", "\n\r\ndata:", " y\n", "\n"])).toEqual(["x", "y"]);
  });

  it("joins multi-line data and skips comments and other fields", async () => {
    expect(await collect([": keep-alive\n", "event: message\nid: 3\ndata: a\ndata: b\n\n"])).toEqual(["a\nb"]);
  });

  it("flushes a last event with no blank line", async () => {
    expect(await collect(["data: tail"])).toEqual(["tail"]);
  });

  it("decodes multi-byte characters split between chunks", async () => {
    const bytes = new TextEncoder().encode("data: héllo\n\n");
    async function* body() {
      yield bytes.slice(0, 8);
      yield bytes.slice(8);
    }
    const out: string[] = [];
    for await (const d of parseSse(body())) out.push(d);
    expect(out).toEqual(["héllo"]);
  });
});

describe("framing", () => {
  it("writes data lines", () => {
    expect(sseData({ a: 1 })).toBe('data: {"a":1}\n\n');
    expect(SSE_DONE).toBe("data: [DONE]\n\n");
  });
});
