// Server-sent events, both ways: a parser for an upstream provider's event stream (the data
// fields of each event, per the WHATWG EventSource rules) and the framing the gateway writes.

/** Yields the data of each event of a byte stream; multi-line data is joined with "\n". */
export async function* parseSse(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = "";
  let data: string[] = [];
  const flushLine = function* (line: string): Generator<string> {
    if (line === "") {
      if (data.length > 0) yield data.join("\n");
      data = [];
      return;
    }
    if (line.startsWith(":")) return; // comment / keep-alive
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data.push(value);
  };
  for await (const chunk of body) {
    buffer += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
    let nl = buffer.search(/\r\n|\r|\n/);
    while (nl !== -1) {
      // A trailing "\r" may be the first half of "\r\n": wait for the next chunk.
      if (nl === buffer.length - 1 && buffer[nl] === "\r") break;
      const line = buffer.slice(0, nl);
      const skip = buffer.startsWith("\r\n", nl) ? 2 : 1;
      buffer = buffer.slice(nl + skip);
      yield* flushLine(line);
      nl = buffer.search(/\r\n|\r|\n/);
    }
  }
  buffer += decoder.decode();
  if (buffer !== "") yield* flushLine(buffer);
  if (data.length > 0) yield data.join("\n");
}

export function sseData(payload: unknown): string {
  return `data: ${typeof payload === "string" ? payload : JSON.stringify(payload)}\n\n`;
}

export const SSE_DONE = "data: [DONE]\n\n";
