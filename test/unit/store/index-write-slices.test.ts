// A checkpoint writes its index lists out in slices, between which commits and reads run:
// after thousands of accounts moved, writing (and at first making) one file per list in one
// synchronous step stalled every commit for seconds. The cut stays one synchronous step: the
// manifest names each list's length at the cut, entries taken at the cut are read from memory
// until they are in their file, and entries indexed after the cut are not named (open cuts
// every list back to the manifest and indexes the journal after it again).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Archive, INDEX_DIR } from '../../../gateway/store/archive.ts';
import type { JournalRecord } from '../../../gateway/store/state.ts';
import { tempDir } from '../../support/temp.ts';

const ACCOUNTS = 1_000;
const ts = '2026-01-01T00:00:00.000Z';

/** Record `s`: a top-up of `account`'s wallet. */
function topUp(s: number, account: number): JournalRecord {
  return {
    s,
    t: ts,
    ops: [
      {
        o: 'post',
        p: {
          id: `pst_${s}`,
          ts,
          memo: 'top-up',
          account_id: `acc${account}`,
          entries: [
            ['funding:topup', -1_000_000],
            [`wallet:acc${account}`, 1_000_000],
          ],
        },
      },
    ],
  };
}

/** The journal records each account's wallet list points at, oldest first. */
function seqsOf(archive: Archive, account: number): number[] {
  const list = archive.existing('wal', `acc${account}`);
  return list ? list.read(0, list.count).map((entry) => entry.seq) : [];
}

test('a checkpoint writes its lists in slices; reads between them see every entry, the manifest names the cut', async () => {
  const data_dir = tempDir('aihub-index-slices-');
  const journal_dir = join(data_dir, 'journal');
  mkdirSync(journal_dir);
  const archive = await Archive.open(data_dir, journal_dir);
  for (let i = 0; i < ACCOUNTS; i++) archive.apply(topUp(i + 1, i), 1, i * 100, 100);

  let settled = false;
  const syncing = archive.sync(() => Promise.resolve()).finally(() => (settled = true));
  let between_slices = 0;
  let second_batch = false;
  while (!settled) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (archive.lists_to_write === 0) continue;
    between_slices++;
    if (!second_batch) {
      // Indexed after the cut, while the cut's entries are still being written: every list
      // now has entries in its file, taken (in memory, being written) or new (its tail).
      for (let i = 0; i < ACCOUNTS; i++) archive.apply(topUp(ACCOUNTS + i + 1, i), 1, 0, 100);
      second_batch = true;
    }
    for (let i = 0; i < ACCOUNTS; i++)
      assert.deepEqual(seqsOf(archive, i), [i + 1, ACCOUNTS + i + 1], `acc${i} between slices`);
  }
  await syncing;
  assert.ok(second_batch, 'the write-out yielded at least once');
  // 1,001 list files (each account's and wal/_all), at most 256 per slice.
  assert.ok(between_slices >= 3, `the write-out ran in slices (${between_slices} pauses seen)`);
  for (let i = 0; i < ACCOUNTS; i++)
    assert.deepEqual(seqsOf(archive, i), [i + 1, ACCOUNTS + i + 1], `acc${i} after`);

  const manifest = JSON.parse(readFileSync(join(data_dir, INDEX_DIR, 'manifest.json'), 'utf8'));
  assert.equal(manifest.seq, ACCOUNTS, 'the manifest is of the cut');
  assert.equal(manifest.lists['wal/acc7'][0], 1, 'a list is named at its length at the cut');
  assert.equal(manifest.lists['wal/_all'][0], ACCOUNTS);
  archive.close();

  // Reopened: every list is as the manifest names it (the journal after it is the tail to index again).
  const reopened = await Archive.open(data_dir, journal_dir);
  for (let i = 0; i < ACCOUNTS; i += 97) assert.deepEqual(seqsOf(reopened, i), [i + 1]);
  reopened.close();
});
