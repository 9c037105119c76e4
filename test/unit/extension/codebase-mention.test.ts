import assert from 'node:assert/strict';
import { test } from 'node:test';
import { codebaseQuery, mentionsCodebase, mergeHits } from '../../../extension/codebase/mention.js';
import type { CodebaseHit } from '../../../extension/codebase/types.js';

test('@codebase is found as a word, and the query leaves it out', () => {
  assert.equal(mentionsCodebase('@codebase where is the invoice total?'), true);
  assert.equal(mentionsCodebase('where is it? @Codebase'), true);
  assert.equal(mentionsCodebase('mail me@codebase.dev'), false);
  assert.equal(mentionsCodebase('see @codebases'), false);
  assert.equal(
    codebaseQuery('@codebase  where is the\ninvoice total?'),
    'where is the invoice total?',
  );
  assert.equal(
    codebaseQuery('@codebase'),
    '@codebase',
    'nothing else: the mention itself is asked',
  );
});

const lines = (from: number, to: number): string =>
  Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}`).join('\n');
const hit = (path: string, start: number, end: number, score: number): CodebaseHit => ({
  path,
  startLine: start,
  endLine: end,
  score,
  text: lines(start, end),
});

test('overlapping and adjacent hits of one file merge into one passage at the best rank', () => {
  const merged = mergeHits([
    hit('a.ts', 10, 20, 0.9),
    hit('b.ts', 1, 5, 0.8),
    hit('a.ts', 15, 30, 0.7),
    hit('a.ts', 31, 35, 0.6),
    hit('a.ts', 50, 60, 0.5),
  ]);
  assert.deepEqual(merged, [
    hit('a.ts', 10, 35, 0.9),
    hit('b.ts', 1, 5, 0.8),
    hit('a.ts', 50, 60, 0.5),
  ]);
});

test('a hit that bridges two passages merges all three', () => {
  const merged = mergeHits([
    hit('a.ts', 1, 5, 0.9),
    hit('a.ts', 10, 15, 0.8),
    hit('a.ts', 4, 11, 0.7),
  ]);
  assert.deepEqual(merged, [hit('a.ts', 1, 15, 0.9)]);
});
