// Document upload, in process (Fastify inject) on a standalone console over a temporary YAML
// folder: a PDF sent as its bytes becomes Markdown in the knowledge base's sources, as HTML does
// (scripts and styles dropped); a file that is not what it says, a PDF without text, a file over
// the size limit, a JSON body and a request without the CSRF token are each refused in words.
import { readResources } from "@capstan/shared/resource-view";
import type { FastifyInstance } from "fastify";
import PDFDocument from "pdfkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makePdf } from "../../../services/shared/src/documents/pdf.fixture.ts";
import { startTestConsole } from "../test-app.ts";
import { MAX_FILE_BYTES } from "./documents.ts";

let app: FastifyInstance;
let resourcesDir = "";
let cookie = "";
let csrf = "";

beforeAll(async () => {
  ({ app, resourcesDir, cookie, csrf } = await startTestConsole());
});

afterAll(async () => {
  await app?.close();
});

const upload = (fileName: string, contentType: string, body: Buffer | string, headers: Record<string, string> = {}) =>
  app.inject({
    method: "POST",
    url: `/api/namespaces/demo/knowledgebases/handbook/documents?fileName=${encodeURIComponent(fileName)}`,
    headers: { cookie, "x-csrf-token": csrf, "content-type": contentType, ...headers },
    payload: body,
  });

/** The knowledge base's sources as the YAML folder holds them now. */
function sources(): { name: string; text?: string }[] {
  const kb = readResources([resourcesDir]).find((r) => r.metadata.name === "handbook");
  return (kb?.spec as { sources?: { name: string; text?: string }[] } | undefined)?.sources ?? [];
}

/** A PDF with a drawing and no text, as a scanned page gives. */
function textlessPdf(): Promise<Buffer> {
  const doc = new PDFDocument({ size: "A4" });
  const parts: Buffer[] = [];
  doc.on("data", (b: Buffer) => parts.push(b));
  const done = new Promise<Buffer>((resolve) => doc.on("end", () => resolve(Buffer.concat(parts))));
  doc.rect(100, 100, 200, 120).fill("#336699");
  doc.end();
  return done;
}

describe("document upload", () => {
  it("takes a PDF as its bytes and keeps its Markdown as a source", async () => {
    const pdf = await makePdf({
      title: "Parking",
      sections: [{ heading: "Visitors", paragraphs: ["Visitors park in garage C; the gate code is ZEBRA-42."] }],
    });
    const res = await upload("parking.pdf", "application/pdf", pdf);
    expect(res.statusCode, res.body).toBe(201);
    const source = sources().find((s) => s.name === "parking.pdf");
    expect(source?.text).toContain("Visitors");
    expect(source?.text).toContain("ZEBRA-42");
    expect(source?.text).not.toContain("%PDF");
    expect(sources().map((s) => s.name)).toEqual(["intro", "parking.pdf"]);
  });

  it("turns HTML into Markdown without scripts or styles, and keeps Markdown as it is", async () => {
    const html =
      "<html><head><style>p{}</style><script>alert(1)</script></head><body><h1>Gate</h1><p>Code <b>ZEBRA-42</b></p></body></html>";
    expect((await upload("gate.html", "text/html", html)).statusCode).toBe(201);
    const text = sources().find((s) => s.name === "gate.html")?.text ?? "";
    expect(text).toContain("# Gate");
    expect(text).toContain("**ZEBRA-42**");
    expect(text).not.toContain("alert");
    expect(text).not.toContain("p{}");
    expect((await upload("notes.md", "text/markdown", "# Title\n\n<b>x</b>")).statusCode).toBe(201);
    expect(sources().find((s) => s.name === "notes.md")?.text).toBe("# Title\n\n<b>x</b>");
  });

  it("refuses in words a file that is not a PDF, a PDF without text, and an empty file", async () => {
    const fake = await upload("fake.pdf", "application/pdf", Buffer.from("just some text"));
    expect(fake.statusCode).toBe(422);
    expect(fake.json().error.message).toBe("fake.pdf cannot be read: not a PDF (no %PDF- header)");
    const scanned = await upload("scan.pdf", "application/pdf", await textlessPdf());
    expect(scanned.statusCode).toBe(422);
    expect(scanned.json().error.message).toContain("scan.pdf has no text to ingest (a scanned PDF");
    const empty = await upload("empty.pdf", "application/pdf", Buffer.alloc(0));
    expect(empty.statusCode).toBe(422);
    expect(empty.json().error.message).toContain("empty.pdf is empty");
    expect(sources().map((s) => s.name)).not.toContain("fake.pdf");
  });

  it("refuses a file over the size limit, a JSON body, and a request without the CSRF token", async () => {
    const big = await upload("big.pdf", "application/pdf", Buffer.alloc(MAX_FILE_BYTES + 1, 0x20));
    expect(big.statusCode).toBe(413);
    expect(big.json().error.message).toBe("the request is larger than 8 MiB, the most the console takes");
    const json = await upload("a.md", "application/json", JSON.stringify({ content: "# A" }));
    expect(json.statusCode).toBe(415);
    expect(json.json().error.message).toContain("application/pdf");
    const noCsrf = await upload("b.md", "text/markdown", "# B", { "x-csrf-token": "" });
    expect(noCsrf.statusCode).toBe(403);
    expect(sources().map((s) => s.name)).not.toContain("b.md");
  });
});
