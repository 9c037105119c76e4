// A small Markdown reader for chat replies: fenced code, headings, lists, quotes, rules, paragraphs,
// and inline code, bold, italics and links. It builds a tree, never HTML, so the webview renders it
// with textContent only (no injection path). Tolerates a reply that is still streaming. Pure.

export type Inline =
  | { t: 'text'; v: string }
  | { t: 'code'; v: string }
  | { t: 'strong'; c: Inline[] }
  | { t: 'em'; c: Inline[] }
  | { t: 'link'; href: string; c: Inline[] };

export type Block =
  | { t: 'p'; c: Inline[] }
  | { t: 'h'; level: number; c: Inline[] }
  | { t: 'code'; lang: string; v: string; closed: boolean }
  | { t: 'ul'; items: Inline[][] }
  | { t: 'ol'; start: number; items: Inline[][] }
  | { t: 'quote'; c: Inline[] }
  | { t: 'hr' };

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const BULLET = /^ {0,3}[-*+]\s+(.*)$/;
const ORDERED = /^ {0,3}(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;

export function parseMarkdown(source: string): Block[] {
  const lines = source.replace(/\r\n?/g, '\n').split('\n');
  const blocks: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    const fence = FENCE.exec(line);
    if (fence) {
      const marker = fence[1]!;
      const body: string[] = [];
      i++;
      let closed = false;
      while (i < lines.length) {
        const inner = lines[i]!;
        const trimmed = inner.trim();
        if (trimmed.startsWith(marker[0]!.repeat(marker.length)) && /^([`~])\1*$/.test(trimmed)) {
          closed = true;
          i++;
          break;
        }
        body.push(inner);
        i++;
      }
      blocks.push({ t: 'code', lang: fence[2] ?? '', v: body.join('\n'), closed });
      continue;
    }
    if (line.trim() === '') {
      i++;
      continue;
    }
    if (RULE.test(line)) {
      blocks.push({ t: 'hr' });
      i++;
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      blocks.push({ t: 'h', level: heading[1]!.length, c: parseInline(heading[2]!) });
      i++;
      continue;
    }
    if (BULLET.test(line) || ORDERED.test(line)) {
      const ordered = ORDERED.exec(line);
      const pattern = ordered ? ORDERED : BULLET;
      const items: string[] = [];
      while (i < lines.length && lines[i]!.trim() !== '' && !FENCE.test(lines[i]!)) {
        const match = pattern.exec(lines[i]!);
        if (match) items.push(match[match.length - 1]!);
        else if (/^\s+\S/.test(lines[i]!) && items.length > 0) items[items.length - 1] += ` ${lines[i]!.trim()}`;
        else break;
        i++;
      }
      const parsed = items.map(parseInline);
      blocks.push(ordered ? { t: 'ol', start: Number(ordered[1]), items: parsed } : { t: 'ul', items: parsed });
      continue;
    }
    if (QUOTE.test(line)) {
      const quoted: string[] = [];
      while (i < lines.length && QUOTE.test(lines[i]!)) quoted.push(QUOTE.exec(lines[i++]!)![1]!);
      blocks.push({ t: 'quote', c: parseInline(quoted.join('\n')) });
      continue;
    }
    const paragraph: string[] = [];
    while (i < lines.length) {
      const next = lines[i]!;
      if (next.trim() === '' || FENCE.test(next) || HEADING.test(next) || BULLET.test(next) || QUOTE.test(next)) break;
      if (paragraph.length > 0 && (ORDERED.test(next) || RULE.test(next))) break;
      paragraph.push(next);
      i++;
    }
    blocks.push({ t: 'p', c: parseInline(paragraph.join('\n')) });
  }
  return blocks;
}

export function parseInline(text: string): Inline[] {
  const out: Inline[] = [];
  let plain = '';
  const flush = (): void => {
    if (plain) out.push({ t: 'text', v: plain });
    plain = '';
  };
  let i = 0;
  while (i < text.length) {
    const rest = text.slice(i);
    const code = /^(`+)([\s\S]*?[^`])\1(?!`)/.exec(rest);
    if (code) {
      flush();
      out.push({ t: 'code', v: code[2]!.replace(/^ (.*) $/, '$1') });
      i += code[0].length;
      continue;
    }
    const strong = /^(\*\*|__)(?=\S)([\s\S]*?\S)\1/.exec(rest);
    if (strong) {
      flush();
      out.push({ t: 'strong', c: parseInline(strong[2]!) });
      i += strong[0].length;
      continue;
    }
    const em = /^(\*|_)(?=\S)([\s\S]*?\S)\1(?![*_\w])/.exec(rest);
    if (em && (em[1] === '*' || !/\w/.test(text[i - 1] ?? ''))) {
      flush();
      out.push({ t: 'em', c: parseInline(em[2]!) });
      i += em[0].length;
      continue;
    }
    const link = /^\[([^\]\n]+)\]\((\S+?)\)/.exec(rest);
    if (link) {
      flush();
      const href = link[2]!;
      if (/^https?:\/\//i.test(href)) out.push({ t: 'link', href, c: parseInline(link[1]!) });
      else out.push(...parseInline(link[1]!));
      i += link[0].length;
      continue;
    }
    plain += text[i];
    i++;
  }
  flush();
  return out;
}
