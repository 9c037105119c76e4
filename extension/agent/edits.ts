// The agent's file edits as pure text operations (unit-tested): search-and-replace blocks applied
// to a file's text, line endings and a byte-order mark kept as the file had them, and the unified
// diff shown for review. No vscode import.
import { createTwoFilesPatch } from 'diff';

export interface ReplaceBlock {
  search: string;
  replace: string;
}

export type EditOutcome = { ok: true; text: string } | { ok: false; error: string };

/** A file's text with `\n` line ends, and how to give it back its own (CRLF, BOM). */
export interface NormalizedText {
  text: string;
  eol: '\n' | '\r\n';
  bom: boolean;
}

export function normalizeText(raw: string): NormalizedText {
  const bom = raw.startsWith('\uFEFF');
  const body = bom ? raw.slice(1) : raw;
  const crlf = (body.match(/\r\n/g) ?? []).length;
  const lf = (body.match(/\n/g) ?? []).length - crlf;
  return { text: body.replace(/\r\n/g, '\n'), eol: crlf > lf ? '\r\n' : '\n', bom };
}

/** The text as the file stores it: its line ends and byte-order mark. */
export function restoreText(text: string, like: Pick<NormalizedText, 'eol' | 'bom'>): string {
  const lines = like.eol === '\r\n' ? text.replace(/\r?\n/g, '\r\n') : text;
  return like.bom ? `\uFEFF${lines}` : lines;
}

/**
 * Applies the blocks in order. Each block's search text must occur exactly once in the text as
 * the blocks before it left it: exactly, or else line by line ignoring the indentation and
 * trailing spaces (models often get those wrong) when that finds one place.
 */
export function applyReplaceBlocks(original: string, blocks: readonly ReplaceBlock[]): EditOutcome {
  if (blocks.length === 0) return { ok: false, error: 'no edits were given' };
  let text = original;
  for (const [index, block] of blocks.entries()) {
    const name = blocks.length > 1 ? `edit ${index + 1}` : 'the edit';
    const search = block.search.replace(/\r\n/g, '\n');
    const replace = block.replace.replace(/\r\n/g, '\n');
    if (search === '') return { ok: false, error: `${name}: the search text is empty` };
    const exact = occurrences(text, search);
    if (exact.length === 1) {
      text = text.slice(0, exact[0]) + replace + text.slice(exact[0]! + search.length);
      continue;
    }
    if (exact.length > 1)
      return {
        ok: false,
        error: `${name}: the search text occurs ${exact.length} times; include more of the surrounding lines so that it matches one place`,
      };
    const loose = looseLineMatch(text, search);
    if (loose === 'many')
      return {
        ok: false,
        error: `${name}: the search text matches several places (ignoring indentation); include more of the surrounding lines`,
      };
    if (!loose)
      return {
        ok: false,
        error: `${name}: the search text was not found; read the file again and copy the lines to replace exactly`,
      };
    text = text.slice(0, loose.start) + replace + text.slice(loose.end);
  }
  return { ok: true, text };
}

function occurrences(text: string, search: string): number[] {
  const found: number[] = [];
  for (let at = text.indexOf(search); at !== -1 && found.length < 10;) {
    found.push(at);
    at = text.indexOf(search, at + 1);
  }
  return found;
}

/** The one run of whole lines equal to the search's lines once each side is trimmed. */
function looseLineMatch(
  text: string,
  search: string,
): { start: number; end: number } | 'many' | undefined {
  const wanted = search
    .replace(/\n$/, '')
    .split('\n')
    .map((l) => l.trim());
  if (wanted.every((l) => l === '')) return undefined;
  const lines = text.split('\n');
  const starts: number[] = [];
  let offset = 0;
  for (const line of lines) {
    starts.push(offset);
    offset += line.length + 1;
  }
  let match: { start: number; end: number } | undefined;
  for (let i = 0; i + wanted.length <= lines.length; i++) {
    if (!wanted.every((w, j) => lines[i + j]!.trim() === w)) continue;
    if (match) return 'many';
    const last = i + wanted.length - 1;
    const endOfLast = starts[last]! + lines[last]!.length;
    // Keep the line break after the run when the search text had one.
    match = { start: starts[i]!, end: search.endsWith('\n') ? endOfLast + 1 : endOfLast };
  }
  return match;
}

export interface DiffView {
  /** Unified diff text (at most `maxChars`, cut at a line end with a note). */
  text: string;
  added: number;
  removed: number;
}

/** The unified diff of a file's change, for the transcript; `before` undefined for a new file. */
export function unifiedDiff(
  path: string,
  before: string | undefined,
  after: string,
  maxChars = 8_000,
): DiffView {
  const patch = createTwoFilesPatch(
    before === undefined ? '/dev/null' : `a/${path}`,
    `b/${path}`,
    before ?? '',
    after,
    '',
    '',
    { context: 3, timeout: 2_000 },
  ) as string | undefined;
  if (patch === undefined)
    return { text: '(the change is too large to show as a diff)', added: 0, removed: 0 };
  const lines = patch.split('\n').filter((l) => !/^=+$/.test(l));
  let added = 0;
  let removed = 0;
  for (const line of lines) {
    if (line.startsWith('+') && !line.startsWith('+++')) added++;
    else if (line.startsWith('-') && !line.startsWith('---')) removed++;
  }
  return { text: cutAtLine(lines.join('\n').trimEnd(), maxChars), added, removed };
}

function cutAtLine(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const cut = text.lastIndexOf('\n', maxChars);
  const kept = text.slice(0, cut > 0 ? cut : maxChars);
  return `${kept}\n… (${text.length - kept.length} more characters of diff not shown)`;
}
