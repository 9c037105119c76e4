import assert from 'node:assert/strict';
import { test } from 'node:test';
import { embedText } from '../../../gateway/llm/engines/builtin-embed.js';
import { chunkText, embeddingInput } from '../../../extension/codebase/chunker.js';
import { normalize, topK } from '../../../extension/codebase/search.js';

const unit = (...values: number[]): Float32Array => normalize(Float32Array.from(values));

test('topK ranks by cosine similarity, best first, at most limit', () => {
  const files = [
    { key: 'a', vectors: Float32Array.of(...unit(1, 0), ...unit(0, 1)) },
    { key: 'b', vectors: Float32Array.of(...unit(1, 1), ...unit(-1, 0)) },
  ];
  const hits = topK(unit(1, 0.1), files, 2, 3);
  assert.deepEqual(
    hits.map((h) => [h.key, h.chunk]),
    [
      ['a', 0],
      ['b', 0],
      ['a', 1],
    ],
  );
  assert.ok(Math.abs(hits[0]!.score - 0.995) < 0.001);
  assert.deepEqual(topK(unit(1, 0), files, 2, 0), []);
  assert.deepEqual(
    topK(unit(1, 0, 0), files, 2, 5),
    [],
    'a query of another dimension finds nothing',
  );
});

test('topK over many chunks equals a full sort', () => {
  const dims = 16;
  let seed = 7;
  const random = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31 - 0.5;
  const files = Array.from({ length: 30 }, (_, f) => {
    const vectors = new Float32Array(20 * dims);
    for (let c = 0; c < 20; c++)
      vectors.set(normalize(Float32Array.from({ length: dims }, random)), c * dims);
    return { key: `f${f}`, vectors };
  });
  const query = normalize(Float32Array.from({ length: dims }, random));
  const all = files.flatMap((file) =>
    Array.from({ length: 20 }, (_, c) => {
      let score = 0;
      for (let d = 0; d < dims; d++) score += query[d]! * file.vectors[c * dims + d]!;
      return { key: file.key, chunk: c, score };
    }),
  );
  all.sort((x, y) => y.score - x.score);
  assert.deepEqual(topK(query, files, dims, 10), all.slice(0, 10));
});

test('normalize makes unit vectors and leaves a zero vector alone', () => {
  const v = normalize(Float32Array.of(3, 4));
  assert.ok(Math.abs(v[0]! - 0.6) < 1e-6 && Math.abs(v[1]! - 0.8) < 1e-6);
  assert.deepEqual([...normalize(new Float32Array(3))], [0, 0, 0]);
});

test("the built-in engine's embeddings find a file by the words a question shares with it", () => {
  // The gateway's offline embeddings (hashed words and trigrams) through the index's own chunker
  // and search: what the extension-host test relies on for @codebase.
  const fixture: Record<string, string> = {
    'src/invoice.ts':
      'export interface LineItem { quantity: number; unitPrice: number }\n\n/** Sums the line items and adds GST at the given rate, rounded to paise. */\nexport function invoiceTotal(items: LineItem[], gstRate: number): number {\n  const net = items.reduce((sum, item) => sum + item.quantity * item.unitPrice, 0);\n  return Math.round(net * (1 + gstRate) * 100) / 100;\n}\n',
    'src/auth.ts':
      "import { createHash } from 'node:crypto';\n\nexport function hashPassword(password: string, salt: string): string {\n  return createHash('sha256').update(salt + password).digest('hex');\n}\n",
    'src/http.ts':
      'export async function getJson(url: string): Promise<unknown> {\n  const response = await fetch(url);\n  if (!response.ok) throw new Error(`HTTP ${response.status}`);\n  return response.json();\n}\n',
    'greeter.ts': 'export function greet(name: string): string {\n  return `Hi, ${name}!`;\n}\n',
  };
  const files = Object.entries(fixture).map(([path, text]) => {
    const chunks = chunkText(text);
    const vectors = new Float32Array(chunks.length * 256);
    chunks.forEach((chunk, i) => vectors.set(embedText(embeddingInput(path, chunk)), i * 256));
    return { key: path, vectors };
  });
  const ask = (question: string): string =>
    topK(normalize(Float32Array.from(embedText(question))), files, 256, 1)[0]!.key;
  assert.equal(ask('How is the invoice total computed with GST?'), 'src/invoice.ts');
  assert.equal(ask('Where is a password hashed with a salt?'), 'src/auth.ts');
  assert.equal(ask('getJson fetch response status'), 'src/http.ts');
});
