import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  blocks,
  chunkText,
  DEFAULT_CHUNK_OPTIONS,
  embeddingInput,
} from '../../../extension/codebase/chunker.js';

const ts = [
  "import { a } from './a.js';",
  "import { b } from './b.js';",
  '',
  '/** Adds. */',
  'export function add(x: number, y: number): number {',
  '  return x + y;',
  '}',
  '',
  '@decorated',
  'class Box {',
  '  value = 1;',
  '}',
].join('\n');

test('top-level blocks start at column 0, with the comments and decorators above them', () => {
  assert.deepEqual(blocks(ts.split('\n')), [
    [0, 1],
    [1, 3],
    [3, 8],
    [8, 12],
  ]);
});

test('small blocks are packed into one chunk with exact 1-based line ranges', () => {
  const chunks = chunkText(`${ts}\n`);
  assert.equal(chunks.length, 1);
  assert.deepEqual(chunks[0], { startLine: 1, endLine: 12, text: ts });
});

test('blocks are not split when they fit: a chunk ends where a block ends', () => {
  const fn = (name: string): string =>
    [`def ${name}():`, ...Array.from({ length: 8 }, (_, i) => `    x${i} = ${i}`), ''].join('\n');
  const text = ['one', 'two', 'three', 'four'].map(fn).join('\n');
  const chunks = chunkText(text, { maxLines: 22 });
  // 10 lines a function (the last one without its trailing blank line): two per chunk.
  assert.deepEqual(
    chunks.map((c) => [c.startLine, c.endLine]),
    [
      [1, 20],
      [21, 39],
    ],
  );
  assert.ok(chunks[1]!.text.startsWith('def three():'));
});

test('a block larger than a chunk is cut by lines with overlap, each chunk bounded', () => {
  const body = Array.from({ length: 200 }, (_, i) => `  const v${i} = ${i};`);
  const text = ['function big() {', ...body, '}'].join('\n');
  const options = { maxLines: 50, maxChars: 100_000, overlapLines: 5 };
  const chunks = chunkText(text, options);
  assert.ok(chunks.length >= 4);
  for (const chunk of chunks) {
    assert.ok(chunk.endLine - chunk.startLine + 1 <= 50);
    assert.equal(
      chunk.text,
      text
        .split('\n')
        .slice(chunk.startLine - 1, chunk.endLine)
        .join('\n'),
    );
  }
  for (let i = 1; i < chunks.length; i++)
    assert.equal(chunks[i]!.startLine, chunks[i - 1]!.endLine - 4, 'five lines overlap');
  assert.equal(chunks[0]!.startLine, 1);
  assert.equal(chunks.at(-1)!.endLine, 202, 'every line is covered');
});

test('chunks are bounded by characters too, and a minified line is cut into pieces', () => {
  const long = 'x'.repeat(5_000);
  const chunks = chunkText(`const a = 1;\n${long}\nconst b = 2;\n`, { maxChars: 1_000 });
  for (const chunk of chunks) assert.ok(chunk.text.length <= 1_000, `${chunk.text.length}`);
  const pieces = chunks.filter((c) => c.startLine === 2);
  assert.equal(pieces.length, 5);
  assert.equal(pieces.map((p) => p.text).join(''), long);
  assert.ok(chunks.some((c) => c.text.includes('const b = 2;')));
});

test('a file yields at most maxChunks chunks; blank files none', () => {
  const text = Array.from({ length: 10_000 }, (_, i) => `line ${i}`).join('\n');
  assert.equal(chunkText(text, { maxChunks: 7 }).length, 7);
  assert.deepEqual(chunkText('\n\n   \n'), []);
  assert.deepEqual(chunkText(''), []);
});

test('CRLF files keep their line numbers, without the carriage returns', () => {
  const chunks = chunkText('a = 1\r\nb = 2\r\n');
  assert.deepEqual(chunks, [{ startLine: 1, endLine: 2, text: 'a = 1\nb = 2' }]);
});

test('the defaults bound a chunk to 60 lines and 1,800 characters', () => {
  assert.equal(DEFAULT_CHUNK_OPTIONS.maxLines, 60);
  assert.equal(DEFAULT_CHUNK_OPTIONS.maxChars, 1_800);
  const text = Array.from({ length: 1_000 }, (_, i) => `let value_${i} = compute(${i});`).join(
    '\n',
  );
  for (const chunk of chunkText(text)) {
    assert.ok(chunk.endLine - chunk.startLine < 60);
    assert.ok(chunk.text.length <= 1_800);
  }
});

test('the embedding input names the file and the lines', () => {
  assert.equal(
    embeddingInput('src/a.ts', { startLine: 3, endLine: 4, text: 'x\ny' }),
    'src/a.ts:3-4\nx\ny',
  );
});
