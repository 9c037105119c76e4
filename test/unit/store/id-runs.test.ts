// The id runs on their own: every entry is found after flushes and merges, including a run the
// memtable became while a merge was running (it was once dropped with the merged pair: a 5M
// bench found a transaction missing by id), and after reopening from what a manifest names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { IdRuns, type IdPlace, type RunMeta } from '../../../gateway/store/id-runs.ts';
import { hash32 } from '../../../gateway/store/archive.ts';
import { tempDir } from '../../support/temp.ts';

const place = (seq: number): IdPlace => ({
  hash: hash32(`txn_${seq}`),
  op: seq % 3,
  seq,
  segment: 1,
  offset: seq * 100,
  length: 99,
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
