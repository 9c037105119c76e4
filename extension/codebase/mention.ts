// `@codebase` in a chat message: the question it asks the index, and the hits merged into
// passages (overlapping or adjacent chunks of one file become one). Pure, unit-tested.
import type { CodebaseHit } from './types.js';

const MENTION = /(^|\s)@codebase\b/i;

export function mentionsCodebase(text: string): boolean {
  return MENTION.test(text);
}

/** The message without its @codebase mentions: what the index is asked. */
export function codebaseQuery(text: string): string {
  const query = text
    .replace(/(^|\s)@codebase\b/gi, '$1')
    .replace(/\s+/g, ' ')
    .trim();
  return query === '' ? text : query;
}

/**
 * Merges hits of the same file whose lines overlap or touch into one passage (at the rank of its
 * best hit, with its best score), keeping the order of the best hits first.
 */
export function mergeHits(hits: readonly CodebaseHit[]): CodebaseHit[] {
  const merged: CodebaseHit[] = [];
  for (const hit of hits) {
    const joined = merged.findIndex(
      (m) =>
        m.path === hit.path && hit.startLine <= m.endLine + 1 && hit.endLine >= m.startLine - 1,
    );
    if (joined < 0) {
      merged.push({ ...hit });
      continue;
    }
    const m = merged[joined]!;
    const lines = new Map<number, string>();
    m.text.split('\n').forEach((line, i) => lines.set(m.startLine + i, line));
    hit.text.split('\n').forEach((line, i) => {
      if (!lines.has(hit.startLine + i)) lines.set(hit.startLine + i, line);
    });
    const startLine = Math.min(m.startLine, hit.startLine);
    const endLine = Math.max(m.endLine, hit.endLine);
    const text: string[] = [];
    for (let line = startLine; line <= endLine; line++) text.push(lines.get(line) ?? '');
    merged[joined] = { ...m, startLine, endLine, text: text.join('\n') };
  }
  // A merge can make a passage touch another one of the same file: merge again until stable.
  return merged.length < hits.length ? mergeHits(merged) : merged;
}
