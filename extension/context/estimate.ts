// Token estimates and trimming for the context the chat sends. Pure, unit-tested.
// The estimate is the usual rule of thumb (about 4 characters per token for code and English):
// shown as "≈", never billed on; the gateway counts the real tokens.

export const CHARS_PER_TOKEN = 4;

export function estimateTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

export interface Trimmed {
  text: string;
  /** 1-based, inclusive: the lines kept. */
  firstLine: number;
  lastLine: number;
  totalLines: number;
  trimmed: boolean;
}

/**
 * Keeps whole lines around the focus (0-based lines `focusFirst..focusLast`, e.g. the selection)
 * within `maxChars`: the focus first, then a line above and a line below in turn. A focus larger
 * than the budget keeps its first lines.
 */
export function trimAround(
  text: string,
  focusFirst: number,
  focusLast: number,
  maxChars: number,
): Trimmed {
  const lines = text.split('\n');
  const total = lines.length;
  if (text.length <= maxChars)
    return { text, firstLine: 1, lastLine: total, totalLines: total, trimmed: false };
  const first = Math.min(Math.max(0, focusFirst), total - 1);
  const last = Math.min(Math.max(first, focusLast), total - 1);
  let start = first;
  let end = first - 1;
  let used = 0;
  const cost = (line: number): number => lines[line]!.length + 1;
  while (end < last && used + cost(end + 1) <= maxChars) used += cost(++end);
  if (end < first) {
    // Not even the focus's first line fits: keep its beginning.
    const kept = lines[first]!.slice(0, Math.max(0, maxChars));
    return {
      text: kept,
      firstLine: first + 1,
      lastLine: first + 1,
      totalLines: total,
      trimmed: true,
    };
  }
  for (let grew = true; grew;) {
    grew = false;
    if (start > 0 && used + cost(start - 1) <= maxChars) {
      used += cost(--start);
      grew = true;
    }
    if (end < total - 1 && used + cost(end + 1) <= maxChars) {
      used += cost(++end);
      grew = true;
    }
  }
  return {
    text: lines.slice(start, end + 1).join('\n'),
    firstLine: start + 1,
    lastLine: end + 1,
    totalLines: total,
    trimmed: true,
  };
}

/**
 * The file's import lines (ES modules, CommonJS, Python, Go, Rust, C/C++, C#, Java/Kotlin), from
 * its first `maxLines` lines, within `maxChars`: what generated code needs to use the file's names.
 */
export function importLines(text: string, maxLines = 200, maxChars = 3_000): string {
  const wanted =
    /^\s*(import\s|import\(|export\s+\*\s+from|export\s+\{[^}]*\}\s+from|from\s+\S+\s+import\s|const\s+\S.*=\s*require\(|#include\s|#import\s|using\s+[\w.]+;|use\s+[\w:{}, ]+;|package\s+[\w.]+|require\s|require_relative\s)/;
  const out: string[] = [];
  let chars = 0;
  for (const line of text.split('\n').slice(0, maxLines)) {
    if (!wanted.test(line)) continue;
    if (chars + line.length + 1 > maxChars) break;
    out.push(line);
    chars += line.length + 1;
  }
  return out.join('\n');
}

/** The last `maxChars` of `text`, cut at a line start when possible. */
export function tailChars(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const cut = text.slice(text.length - maxChars);
  const newline = cut.indexOf('\n');
  return newline >= 0 && newline < cut.length - 1 ? cut.slice(newline + 1) : cut;
}

/** The first `maxChars` of `text`, cut at a line end when possible. */
export function headChars(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const cut = text.slice(0, maxChars);
  const newline = cut.lastIndexOf('\n');
  return newline > 0 ? cut.slice(0, newline + 1) : cut;
}

/**
 * Fallback for "the enclosing function or class" when no symbol provider answers: from the
 * selection's first line, up to the nearest line with less indentation that opens a block, and
 * down to where the indentation returns to it. 0-based lines; bounded to `maxLines`.
 */
export function enclosingBlockByIndent(
  text: string,
  firstLine: number,
  lastLine: number,
  maxLines = 400,
): { first: number; last: number } | undefined {
  const lines = text.split('\n');
  const indent = (line: string): number => line.length - line.trimStart().length;
  const blank = (line: string | undefined): boolean => line === undefined || line.trim() === '';
  let selectionIndent = Infinity;
  for (let i = firstLine; i <= lastLine && i < lines.length; i++)
    if (!blank(lines[i])) selectionIndent = Math.min(selectionIndent, indent(lines[i]!));
  if (selectionIndent === Infinity) return undefined;
  const opener =
    /(\{\s*(\/\/.*)?$|:\s*(#.*)?$|=>\s*$|\b(function|def|class|fn|func|interface|impl|struct|enum|module|namespace)\b)/;
  let head = -1;
  for (let i = firstLine; i >= Math.max(0, firstLine - maxLines); i--) {
    const line = lines[i]!;
    if (blank(line)) continue;
    if (
      (indent(line) < selectionIndent || (i === firstLine && opener.test(line))) &&
      opener.test(line)
    ) {
      head = i;
      break;
    }
  }
  if (head < 0) return undefined;
  const headIndent = indent(lines[head]!);
  let last = Math.max(lastLine, head);
  for (let i = Math.max(lastLine, head) + 1; i < lines.length && i <= head + maxLines; i++) {
    const line = lines[i]!;
    if (blank(line)) continue;
    if (indent(line) <= headIndent) {
      // A closing brace (or `end`) at the head's indentation belongs to the block.
      if (/^\s*([}\])]|end\b)/.test(line)) last = i;
      break;
    }
    last = i;
  }
  return { first: head, last };
}
