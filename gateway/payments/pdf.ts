// A minimal PDF writer for documents of text (receipts, statements): PDF 1.4, the standard
// Helvetica fonts (not embedded, WinAnsi encoding), one content stream, and a cross-reference
// table with exact byte offsets. Small enough to read in full, and no dependency in the bundle.

export interface PdfText {
  x: number;
  y: number;
  size: number;
  text: string;
  bold?: boolean;
  /** Grey instead of black. */
  muted?: boolean;
}

export interface PdfLine {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/** A4 in points. */
export const PAGE = { width: 595, height: 842 } as const;

/** WinAnsi-safe text: the rupee sign becomes "Rs.", other characters outside Latin-1 become "?". */
export function pdfSafe(text: string): string {
  let out = '';
  for (const char of text.replaceAll('₹', 'Rs.')) {
    const code = char.codePointAt(0)!;
    out += (code >= 0x20 && code <= 0x7e) || (code >= 0xa0 && code <= 0xff) ? char : '?';
  }
  return out;
}

function literal(text: string): string {
  return `(${pdfSafe(text).replace(/[\\()]/g, (c) => `\\${c}`)})`;
}

function num(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

export interface PdfPage {
  texts: readonly PdfText[];
  lines?: readonly PdfLine[];
}

export function renderPdf(input: {
  title: string;
  texts: readonly PdfText[];
  lines?: readonly PdfLine[];
  created_at: Date;
}): Buffer {
  return renderPdfPages({
    title: input.title,
    pages: [{ texts: input.texts, lines: input.lines ?? [] }],
    created_at: input.created_at,
  });
}

function pageStream(page: PdfPage): string {
  const content: string[] = [];
  for (const line of page.lines ?? [])
    content.push(
      `0.75 G 0.8 w ${num(line.x1)} ${num(line.y1)} m ${num(line.x2)} ${num(line.y2)} l S`,
    );
  for (const item of page.texts) {
    const colour = item.muted ? '0.4 g' : '0 g';
    content.push(
      `BT ${colour} /${item.bold ? 'F2' : 'F1'} ${num(item.size)} Tf ${num(item.x)} ${num(item.y)} Td ${literal(item.text)} Tj ET`,
    );
  }
  return content.join('\n');
}

/** A document of several A4 pages: objects 1 catalog, 2 pages, 3–4 fonts, then a page and its content stream each, the info last. */
export function renderPdfPages(input: {
  title: string;
  pages: readonly PdfPage[];
  created_at: Date;
}): Buffer {
  const date = input.created_at.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  const first_page = 5;
  const kids = input.pages.map((_, i) => `${first_page + 2 * i} 0 R`).join(' ');
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${kids}] /Count ${input.pages.length} >>`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>',
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>',
  ];
  input.pages.forEach((page, i) => {
    const stream = pageStream(page);
    objects.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 ${PAGE.width} ${PAGE.height}] /Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents ${first_page + 2 * i + 1} 0 R >>`,
      `<< /Length ${Buffer.byteLength(stream, 'latin1')} >>\nstream\n${stream}\nendstream`,
    );
  });
  objects.push(
    `<< /Title ${literal(input.title)} /Producer (AIHub gateway) /CreationDate (D:${date}Z) >>`,
  );
  // Latin-1 throughout, so a character is a byte and the offsets below are byte offsets.
  let body = '%PDF-1.4\n%\xe2\xe3\xcf\xd3\n';
  const offsets: number[] = [];
  objects.forEach((object, index) => {
    offsets.push(Buffer.byteLength(body, 'latin1'));
    body += `${index + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref_at = Buffer.byteLength(body, 'latin1');
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) body += `${String(offset).padStart(10, '0')} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /Info ${objects.length} 0 R >>\nstartxref\n${xref_at}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}
