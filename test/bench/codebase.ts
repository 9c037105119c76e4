// npm run bench:codebase: what the extension's codebase index costs, side by side in one run.
// - a query (cosine top-8 over every vector) at 5,000, 20,000 and 80,000 chunks of 256 dimensions
//   and 20,000 of 1,536, against a full sort of the same scores: linear in chunks × dimensions;
// - opening the index log (replaying it into memory) and appending one file's record, at 20,000
//   chunks of 256 dimensions: a change costs one small append, not a rewrite.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { normalize, topK, type VectorFile } from '../../extension/codebase/search.js';
import { IndexStore, type IndexedFile } from '../../extension/codebase/store.js';

const CHUNKS_PER_FILE = 10;

let seed = 12_345;
function random(): number {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31 - 0.5;
}

function files(chunks: number, dims: number): VectorFile[] {
  const out: VectorFile[] = [];
  for (let f = 0; f * CHUNKS_PER_FILE < chunks; f++) {
    const vectors = new Float32Array(CHUNKS_PER_FILE * dims);
    for (let c = 0; c < CHUNKS_PER_FILE; c++) {
      const v = normalize(Float32Array.from({ length: dims }, random));
      vectors.set(v, c * dims);
    }
    out.push({ key: `file:///w/src/file-${f}.ts`, vectors });
  }
  return out;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function timeMs(runs: number, fn: () => void): number {
  const samples: number[] = [];
  fn(); // warm-up
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    fn();
    samples.push(performance.now() - started);
  }
  return median(samples);
}

function fullSort(query: Float32Array, all: VectorFile[], dims: number): void {
  const scores: Array<{ key: string; chunk: number; score: number }> = [];
  for (const file of all)
    for (let c = 0; c < file.vectors.length / dims; c++) {
      let score = 0;
      for (let d = 0; d < dims; d++) score += query[d]! * file.vectors[c * dims + d]!;
      scores.push({ key: file.key, chunk: c, score });
    }
  scores.sort((a, b) => b.score - a.score);
}

const rows: string[][] = [];
let base: number | undefined;
for (const [chunks, dims] of [
  [5_000, 256],
  [20_000, 256],
  [80_000, 256],
  [20_000, 1_536],
] as const) {
  const all = files(chunks, dims);
  const query = normalize(Float32Array.from({ length: dims }, random));
  const top = timeMs(9, () => topK(query, all, dims, 8));
  const sorted = timeMs(5, () => fullSort(query, all, dims));
  base ??= top / (chunks * dims);
  rows.push([
    `${chunks.toLocaleString('en-US')} × ${dims}`,
    `${((chunks * dims * 4) / 1_048_576).toFixed(1)} MiB`,
    `${top.toFixed(2)} ms`,
    `${sorted.toFixed(2)} ms`,
    `${(sorted / top).toFixed(1)}×`,
    `${(top / (chunks * dims) / base).toFixed(2)}`,
  ]);
}
console.log('codebase search: top-8 by cosine over every chunk (median of 9)');
printTable(
  ['chunks × dims', 'vectors', 'top-8', 'full sort', 'sort / top-8', 'per multiply-add vs 5k×256'],
  rows,
);

// The log: open (replay) and one append, at 20,000 chunks of 256 dimensions.
const dir = mkdtempSync(join(tmpdir(), 'aihub-bench-index-'));
try {
  const { store } = await IndexStore.open(dir, { model: 'bench' });
  await store.setDims(256);
  const record = (file: VectorFile, i: number): IndexedFile => {
    const lines = new Uint32Array(CHUNKS_PER_FILE * 2).map((_, j) => j + 1);
    const hash = createHash('sha256').update(`${file.key}:${i}`).digest('hex');
    return { key: file.key, hash, size: 1_000, mtime: i, lines, vectors: file.vectors };
  };
  const all = files(20_000, 256);
  let started = performance.now();
  for (const [i, file] of all.entries()) await store.put(record(file, i));
  await store.flush();
  const writeAll = performance.now() - started;
  await store.close();
  const size = statSync(store.path).size;
  started = performance.now();
  const { store: reopened } = await IndexStore.open(dir, { model: 'bench' });
  const open = performance.now() - started;
  started = performance.now();
  await reopened.put(record(all[7]!, 99));
  await reopened.flush();
  const append = performance.now() - started;
  await reopened.close();
  const grown = statSync(store.path).size - size;
  console.log('\ncodebase index log: 20,000 chunks × 256 dimensions in 2,000 files');
  printTable(
    ['operation', 'time', 'bytes'],
    [
      ['write every file (first index)', `${writeAll.toFixed(0)} ms`, size.toLocaleString('en-US')],
      ['open (replay into memory)', `${open.toFixed(0)} ms`, size.toLocaleString('en-US')],
      [
        'one changed file (append + fdatasync)',
        `${append.toFixed(2)} ms`,
        grown.toLocaleString('en-US'),
      ],
    ],
  );
  console.log(
    `one change appends ${((100 * grown) / size).toFixed(2)}% of the log instead of rewriting it`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}

function printTable(header: string[], body: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: string[]): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(line(header));
  for (const row of body) console.log(line(row));
}
