// Test PDFs made with pdfkit (a dev dependency; its standard fonts are built in): a title, section
// headings, wrapped paragraphs, a bulleted and a numbered list, a code sample in Courier, and a
// running footer with the page number on each page. Used by the converter's tests, search's
// documents API tests and the scraper's PDF test.
import PDFDocument from "pdfkit";

export interface PdfSection {
  heading: string;
  paragraphs?: string[];
  bullets?: string[];
  numbered?: string[];
  code?: string[];
}

export function makePdf(opts: { title: string; sections: PdfSection[]; info?: { Title?: string } }): Promise<Buffer> {
  const doc = new PDFDocument({ size: "A4", margin: 60, bufferPages: true, info: opts.info ?? {} });
  const parts: Buffer[] = [];
  doc.on("data", (b: Buffer) => parts.push(b));
  const done = new Promise<Buffer>((resolve) => doc.on("end", () => resolve(Buffer.concat(parts))));
  doc.font("Helvetica-Bold").fontSize(22).text(opts.title);
  doc.moveDown();
  opts.sections.forEach((s, i) => {
    if (i > 0 && i % 2 === 0) doc.addPage();
    doc.font("Helvetica-Bold").fontSize(15).text(s.heading);
    doc.moveDown(0.5);
    for (const p of s.paragraphs ?? []) {
      doc.font("Helvetica").fontSize(11).text(p, { align: "left" });
      doc.moveDown(0.8);
    }
    if (s.bullets) {
      doc.font("Helvetica").fontSize(11);
      for (const b of s.bullets) doc.text(`•  ${b}`, { indent: 10 });
      doc.moveDown(0.8);
    }
    if (s.numbered) {
      doc.font("Helvetica").fontSize(11);
      for (const [n, b] of s.numbered.entries()) doc.text(`${n + 1}.  ${b}`, { indent: 10 });
      doc.moveDown(0.8);
    }
    if (s.code) {
      doc.font("Courier").fontSize(10);
      for (const line of s.code) doc.text(line);
      doc.moveDown(0.8);
    }
  });
  const range = doc.bufferedPageRange();
  for (let p = range.start; p < range.start + range.count; p++) {
    doc.switchToPage(p);
    doc
      .font("Helvetica")
      .fontSize(9)
      .text(`Capstan test manual  ${p + 1}`, 60, doc.page.height - 40, {
        lineBreak: false,
      });
  }
  doc.end();
  return done;
}
