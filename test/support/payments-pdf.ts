// Reads a PDF back with a real parser (pdf.js, the one Firefox uses): the page count and the
// text of each page, so a test can see what a reader would.
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';

export async function pdfText(
  bytes: Uint8Array,
): Promise<{ pages: number; text: string; title: string | null }> {
  const document = await getDocument({
    data: new Uint8Array(bytes),
    isEvalSupported: false,
    useSystemFonts: false,
    verbosity: 0,
  }).promise;
  try {
    const parts: string[] = [];
    for (let index = 1; index <= document.numPages; index++) {
      const page = await document.getPage(index);
      const content = await page.getTextContent();
      parts.push(content.items.map((item) => ('str' in item ? item.str : '')).join('\n'));
    }
    const meta = await document.getMetadata();
    const info = meta.info as { Title?: string };
    return { pages: document.numPages, text: parts.join('\n'), title: info.Title ?? null };
  } finally {
    await document.destroy();
  }
}
