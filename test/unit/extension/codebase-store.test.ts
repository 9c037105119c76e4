import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { INDEX_FILE, IndexStore, type IndexedFile } from '../../../extension/codebase/store.js';

const DIMS = 4;

function dir(t: { after(fn: () => void): void }): string {
  const path = mkdtempSync(join(tmpdir(), 'aihub-index-test-'));
  t.after(() => rmSync(path, { recursive: true, force: true }));
  return path;
}

function file(key: string, chunks: number, seed = 1): IndexedFile {
  const vectors = new Float32Array(chunks * DIMS);
  for (let i = 0; i < vectors.length; i++) vectors[i] = Math.fround(((i + seed) % 7) / 7 - 0.5);
  const lines = new Uint32Array(chunks * 2);
  for (let c = 0; c < chunks; c++) {
    lines[2 * c] = c * 10 + 1;
    lines[2 * c + 1] = c * 10 + 10;
  }
  return {
    key,
    hash: createHash('sha256').update(`${key}:${seed}`).digest('hex'),
    size: 100 * chunks,
    mtime: 1_700_000_000_000 + seed,
    lines,
    vectors,
  };
}

async function opened(path: string, model = 'service-ai-lite'): Promise<IndexStore> {
  const { store, reset } = await IndexStore.open(path, { model });
  assert.equal(reset, undefined, 'the index loads');
  return store;
}

test('files put, replaced and removed survive a reopen, vectors bit for bit', async (t) => {
  const path = dir(t);
  const store = await opened(path);
  assert.equal(store.dims, 0);
  await store.setDims(DIMS);
  await store.put(file('file:///w/a.ts', 3));
  await store.put(file('file:///w/b.ts', 2));
  await store.put(file('file:///w/a.ts', 1, 5)); // a changed: one chunk now
  await store.put(file('file:///w/c.ts', 2));
  await store.remove('file:///w/c.ts');
  await store.flush();
  assert.deepEqual(store.stats().chunks, 3);
  await store.close();

  const again = await opened(path);
  assert.equal(again.dims, DIMS);
  assert.deepEqual([...again.files.keys()].sort(), ['file:///w/a.ts', 'file:///w/b.ts']);
  assert.deepEqual(again.files.get('file:///w/a.ts'), file('file:///w/a.ts', 1, 5));
  assert.deepEqual(again.files.get('file:///w/b.ts'), file('file:///w/b.ts', 2));
  assert.deepEqual(again.stats(), {
    files: 2,
    chunks: 3,
    dims: DIMS,
    vectorBytes: 3 * DIMS * 4,
    diskBytes: statSync(join(path, INDEX_FILE)).size,
  });
  await again.close();
});

test('a change appends one record: the file is not rewritten', async (t) => {
  const path = dir(t);
  const store = await opened(path);
  await store.setDims(DIMS);
  for (let i = 0; i < 50; i++) await store.put(file(`file:///w/f${i}.ts`, 2));
  await store.flush();
  const before = readFileSync(join(path, INDEX_FILE));
  await store.put(file('file:///w/f7.ts', 2, 9));
  await store.flush();
  const after = readFileSync(join(path, INDEX_FILE));
  assert.ok(after.subarray(0, before.length).equals(before), 'the earlier bytes are untouched');
  const record = after.length - before.length;
  // length + kind + key length + key + hash + size + mtime + count + lines + vectors + checksum
  assert.equal(
    record,
    4 + 1 + 2 + 'file:///w/f7.ts'.length + 32 + 8 + 8 + 4 + 2 * 8 + 2 * DIMS * 4 + 4,
  );
  await store.close();
});

test('a torn tail (a crash while appending) is cut off and the rest loads', async (t) => {
  const path = dir(t);
  const store = await opened(path);
  await store.setDims(DIMS);
  await store.put(file('file:///w/a.ts', 2));
  await store.flush();
  const afterA = statSync(join(path, INDEX_FILE)).size;
  await store.put(file('file:///w/b.ts', 2));
  await store.flush();
  await store.close();
  const full = readFileSync(join(path, INDEX_FILE));
  // Cut the last record in the middle.
  writeFileSync(join(path, INDEX_FILE), full.subarray(0, full.length - 10));
  const again = await opened(path);
  assert.deepEqual([...again.files.keys()], ['file:///w/a.ts']);
  assert.equal(statSync(join(path, INDEX_FILE)).size, afterA, 'the torn record is cut off');
  await again.put(file('file:///w/c.ts', 1)); // shorter than the torn record
  await again.close();
  const third = await opened(path);
  assert.deepEqual([...third.files.keys()].sort(), ['file:///w/a.ts', 'file:///w/c.ts']);
  await third.close();
  const fourth = await opened(path);
  await fourth.put(file('file:///w/b.ts', 2));
  await fourth.close();
  const fifth = await opened(path);
  assert.deepEqual([...fifth.files.keys()].sort(), [
    'file:///w/a.ts',
    'file:///w/b.ts',
    'file:///w/c.ts',
  ]);
  await fifth.close();
});

test('a damaged record stops the replay there (its checksum does not match)', async (t) => {
  const path = dir(t);
  const store = await opened(path);
  await store.setDims(DIMS);
  await store.put(file('file:///w/a.ts', 1));
  await store.flush();
  const good = statSync(join(path, INDEX_FILE)).size;
  await store.put(file('file:///w/b.ts', 1));
  await store.close();
  const bytes = readFileSync(join(path, INDEX_FILE));
  bytes[good + 40]! ^= 0xff;
  writeFileSync(join(path, INDEX_FILE), bytes);
  const again = await opened(path);
  assert.deepEqual([...again.files.keys()], ['file:///w/a.ts']);
  await again.close();
});

test('another embeddings model, another format or garbage: the index starts empty and says why', async (t) => {
  const path = dir(t);
  const store = await opened(path);
  await store.setDims(DIMS);
  await store.put(file('file:///w/a.ts', 1));
  await store.close();
  const other = await IndexStore.open(path, { model: 'service-ai-pro-4' });
  assert.match(
    other.reset ?? '',
    /embeddings model changed \(service-ai-lite → service-ai-pro-4\)/,
  );
  assert.equal(other.store.files.size, 0);
  assert.equal(other.store.dims, 0);
  await other.store.close();
  // The discarded index was replaced on disk: the old model's index is gone too.
  const back = await IndexStore.open(path, { model: 'service-ai-lite' });
  assert.match(back.reset ?? '', /embeddings model changed/);
  await back.store.close();

  writeFileSync(join(path, INDEX_FILE), 'not an index at all');
  const garbage = await IndexStore.open(path, { model: 'service-ai-lite' });
  assert.equal(garbage.reset, 'not an index file');
  await garbage.store.close();
});

test('a new dimension needs an empty index; clear() drops everything', async (t) => {
  const path = dir(t);
  const store = await opened(path);
  await store.setDims(DIMS);
  await store.put(file('file:///w/a.ts', 1));
  await assert.rejects(store.setDims(8), /not empty/);
  await assert.rejects(
    store.put({ ...file('file:///w/b.ts', 1), vectors: new Float32Array(8) }),
    /dimension/,
  );
  await store.clear(8);
  assert.equal(store.dims, 8);
  assert.equal(store.files.size, 0);
  await store.close();
  const again = await opened(path);
  assert.equal(again.dims, 8);
  assert.equal(again.files.size, 0);
  await again.close();
});

test('compaction keeps the live records only, and the result loads the same', async (t) => {
  const path = dir(t);
  const store = await opened(path);
  await store.setDims(64);
  const big = (key: string, seed: number): IndexedFile => {
    const f = file(key, 200, seed);
    return { ...f, vectors: new Float32Array(200 * 64).fill(seed / 100) };
  };
  for (let round = 0; round < 6; round++)
    for (let i = 0; i < 4; i++) await store.put(big(`file:///w/${i}.ts`, round + 1));
  await store.flush();
  assert.equal(store.wasteful, true, 'five of six rounds are dead');
  const before = statSync(join(path, INDEX_FILE)).size;
  await store.compact();
  const after = statSync(join(path, INDEX_FILE)).size;
  assert.ok(after < before / 5, `${after} < ${before} / 5`);
  assert.equal(store.wasteful, false);
  assert.equal(store.stats().diskBytes, after);
  await store.put(big('file:///w/new.ts', 9));
  await store.close();
  const again = await opened(path);
  assert.equal(again.files.size, 5);
  assert.equal(again.files.get('file:///w/2.ts')!.vectors[5], Math.fround(6 / 100));
  await again.close();
});

test('destroy() deletes the index from disk', async (t) => {
  const path = dir(t);
  const store = await opened(path);
  await store.setDims(DIMS);
  await store.put(file('file:///w/a.ts', 1));
  await store.destroy();
  assert.throws(() => statSync(join(path, INDEX_FILE)), /ENOENT/);
  appendFileSync(join(path, 'other'), 'x'); // the folder itself stays usable
});
