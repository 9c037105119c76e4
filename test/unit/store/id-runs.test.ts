// The id runs on their own: every entry is found after flushes and merges, including a run the
// memtable became while a merge was running (it was once dropped with the merged pair: a 5M
// bench found a transaction missing by id), and after reopening from what a manifest names.
// Their membership filters: no false negatives, a lookup reads about one block whatever the
// number of runs, and a damaged filter is built again from its own run. Entries carry the
// rows kept beside them (up to ID_INLINE_MAX bytes) through flushes, merges and reopening.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ID_RUN_DIR, IdRuns, type IdPlace, type RunMeta } from '../../../gateway/store/id-runs.ts';
import { IdFilter } from '../../../gateway/store/id-filter.ts';
import { hash32 } from '../../../gateway/store/archive.ts';
import { tempDir } from '../../support/temp.ts';

/** Two entries in three carry a row beside them, of 1 to 1,024 bytes (entries of 45 to 1,068 bytes in blocks of 8 kB). */
const place = (seq: number): IdPlace => ({
  hash: hash32(`txn_${seq}`),
  op: seq % 3,
  seq,
  segment: 1,
  offset: seq * 100,
  length: 99,
  ...(seq % 3 === 0
    ? {}
    : { inline: Buffer.from(`row ${seq} `.padEnd(1 + ((seq * 37) % 1024), '.')) }),
});

function found(ids: IdRuns, seq: number): IdPlace[] {
  const out: IdPlace[] = [];
  ids.find(hash32(`txn_${seq}`), (p) => {
    if (p.seq === seq) out.push(p);
    return true;
  });
  return out;
}

test('id runs: flushes, merges, a flush in the middle of a merge, and a reopen find every entry once', async () => {
  const dir = tempDir('aihub-id-runs-');
  try {
    const ids = new IdRuns(dir, { max_memtable: 1_000 });
    let seq = 0;
    // 3,000 entries: three runs written when the memtable filled.
    for (; seq < 3_000;) ids.add(place(++seq));
    // A merge begins (newest two: 1,000 and 1,000) and, before it ends, the memtable fills again.
    const compacting = ids.compact();
    for (; seq < 4_000;) ids.add(place(++seq));
    await compacting;
    await ids.compact();
    for (; seq < 4_500;) ids.add(place(++seq));
    ids.flush();
    const metas: RunMeta[] = ids.metas();
    const covered = metas.reduce((sum, [, , count]) => sum + count, 0);
    assert.equal(covered, 4_500, `runs ${JSON.stringify(metas)} hold every entry`);
    for (let s = 1; s <= 4_500; s++) assert.deepEqual(found(ids, s), [place(s)], `entry ${s}`);
    ids.close();

    const reopened = new IdRuns(dir);
    assert.deepEqual(reopened.open(metas, false), [], 'nothing damaged');
    for (let s = 1; s <= 4_500; s++)
      assert.deepEqual(found(reopened, s), [place(s)], `entry ${s} after reopening`);
    reopened.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('id filter: never says no to a hash it holds, rarely says maybe to one it does not, and refuses a damaged file', () => {
  const dir = tempDir('aihub-id-filter-');
  try {
    const held = Array.from({ length: 100_000 }, (_, i) => hash32(`txn_held_${i}`));
    const filter = IdFilter.sized(held.length);
    for (const hash of held) filter.add(hash);
    for (const hash of held) assert.ok(filter.mayHold(hash), `no false negative for ${hash}`);
    let maybe = 0;
    for (let i = 0; i < 100_000; i++) if (filter.mayHold(hash32(`txn_other_${i}`))) maybe++;
    assert.ok(maybe < 2_000, `${maybe} false positives in 100,000 (about 800 expected)`);
    assert.ok(maybe > 0, 'the probe set is not trivially empty');

    const file = join(dir, 'f.bloom');
    filter.write(file);
    const back = IdFilter.read(file, held.length);
    assert.ok(back, 'a whole file reads back');
    for (const hash of held) assert.ok(back.mayHold(hash));
    assert.equal(IdFilter.read(file, held.length + 10_000), null, 'sized for another count');
    const bytes = readFileSync(file);
    bytes[100] = bytes[100]! ^ 0xff;
    writeFileSync(file, bytes);
    assert.equal(IdFilter.read(file, held.length), null, 'a flipped byte fails the checksum');
    writeFileSync(file, bytes.subarray(0, 50));
    assert.equal(IdFilter.read(file, held.length), null, 'a short file');
    assert.equal(IdFilter.read(join(dir, 'missing.bloom'), held.length), null, 'no file');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('id runs: a lookup reads about one block however many runs there are; a missing, zeroed or short filter is built again from its run', () => {
  const dir = tempDir('aihub-id-runs-filter-');
  try {
    // 24 runs of 1,000 (no merges): without filters a lookup of the oldest reads 24 blocks.
    const ids = new IdRuns(dir, { max_memtable: 1_000 });
    for (let seq = 1; seq <= 24_000; seq++) ids.add(place(seq));
    const metas = ids.metas();
    assert.equal(metas.length, 24);
    const lookups = (runs: IdRuns, from: number, to: number) => {
      const before = runs.blocks_read;
      for (let s = from; s <= to; s++) assert.deepEqual(found(runs, s), [place(s)], `entry ${s}`);
      return (runs.blocks_read - before) / (to - from + 1);
    };
    const per_lookup = lookups(ids, 1, 24_000);
    assert.ok(per_lookup >= 1 && per_lookup < 1.3, `${per_lookup} blocks per lookup`);
    const before_absent = ids.blocks_read;
    for (let i = 0; i < 10_000; i++) ids.find(hash32(`txn_absent_${i}`), () => true);
    const absent = (ids.blocks_read - before_absent) / 10_000;
    assert.ok(absent < 0.3, `${absent} blocks per lookup of an absent id`);
    ids.close();

    // As after a SIGKILL or damage: one filter gone, one zeroed, one short, one fence file gone.
    const run = (k: number) => join(dir, ID_RUN_DIR, `${metas[k]![0]}-${metas[k]![1]}.run`);
    rmSync(`${run(0)}.bloom`);
    writeFileSync(`${run(5)}.bloom`, Buffer.alloc(statSync(`${run(5)}.bloom`).size));
    writeFileSync(`${run(9)}.bloom`, readFileSync(`${run(9)}.bloom`).subarray(0, 20));
    rmSync(`${run(12)}.fence`);
    const reopened = new IdRuns(dir);
    assert.deepEqual(reopened.open(metas, false), [], 'nothing damaged: derived files are rebuilt');
    for (const k of [0, 5, 9])
      assert.ok(IdFilter.read(`${run(k)}.bloom`, metas[k]![2]), `filter ${k} written back whole`);
    const after = lookups(reopened, 1, 24_000);
    assert.ok(after >= 1 && after < 1.3, `${after} blocks per lookup after the rebuild`);
    reopened.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
