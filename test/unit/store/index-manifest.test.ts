// The index manifest names only durable records. History is indexed as soon as its journal
// lines are written, while their fdatasync is still in flight (the indexing rides on the disk
// wait instead of adding to each commit group's cycle), so `Archive.sync` must not write a
// manifest naming a record until the journal is durable up to it: after a power loss, no
// index may point at a line the journal lost.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Archive, INDEX_DIR } from '../../../gateway/store/archive.ts';
import type { JournalRecord } from '../../../gateway/store/state.ts';
import { tempDir } from '../../support/temp.ts';

const manifestOf = (data_dir: string): { seq: number; lists: Record<string, unknown> } | null => {
  const file = join(data_dir, INDEX_DIR, 'manifest.json');
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : null;
};

test('a manifest is written only once the journal is durable up to the record it names', async () => {
  const data_dir = tempDir('aihub-index-manifest-');
  const journal_dir = join(data_dir, 'journal');
  mkdirSync(journal_dir);
  const archive = await Archive.open(data_dir, journal_dir);
  const ts = '2026-01-01T00:00:00.000Z';
  const record: JournalRecord = {
    s: 1,
    t: ts,
    ops: [
      {
        o: 'post',
        p: {
          id: 'pst_1',
          ts,
          memo: 'top-up',
          account_id: 'acc1',
          entries: [
            ['funding:topup', -5_000_000],
            ['wallet:acc1', 5_000_000],
          ],
        },
      },
    ],
  };
  // Placed (written), its fdatasync not done yet.
  archive.apply(record, 1, 0, JSON.stringify(record).length);
  let durable!: () => void;
  const disk = new Promise<void>((resolve) => (durable = resolve));
  let asked!: (seq: number) => void;
  const asked_for = new Promise<number>((resolve) => (asked = resolve));
  const syncing = archive.sync((seq) => {
    asked(seq);
    return disk;
  });
  assert.equal(await asked_for, 1, 'the manifest waits for the record it is about to name');
  assert.equal(manifestOf(data_dir), null, 'no manifest while record 1 is not durable');
  durable();
  await syncing;
  const manifest = manifestOf(data_dir);
  assert.equal(manifest?.seq, 1);
  assert.ok(manifest.lists['wal/acc1'], 'the wallet list of acc1 is named');
  archive.close();
});
