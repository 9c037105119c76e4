// A finalized transaction finalized again (a success reversed days later): its list entry
// stays where its first finalization put it, and every read (by id, a page, a status filter
// answered from the tag counts alone, a filter that reads rows, a report's chunks) shows its
// newest version, once. The same after a clean restart (the manifest keeps the revisions),
// after a SIGKILL with the revisions in the journal tail only, with the indexes removed
// (indexed again from the first record), and with a list cut short by damage.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { rmSync, statSync, truncateSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { FileStore as Store } from '../../../gateway/store/store.ts';
import { ALL, INDEX_DIR } from '../../../gateway/store/archive.ts';
import { verifyDataDir } from '../../../gateway/store/verify.ts';
import { fillAccount, fillNow, fillPayments, fillTxnId } from '../../support/history-fill.ts';
import { reviseTxns } from '../../support/revisions.ts';
import { tempDir } from '../../support/temp.ts';
import { PAYMENT_HISTORY_TAGS } from '../../../gateway/payments/history-tags.ts';

const TXNS = 600;
const ACCOUNTS = 4;
const CHILD = resolve(import.meta.dirname, '../../support/revision-child.ts');
/** Successes (not a multiple of 17: fillPayments fails those) of every account, old and new. */
const REVERSED_EARLY = [1, 2, 3, 5, 250, 251];
const REVERSED_LATE = [6, 7, 400, 598];

async function filled(): Promise<string> {
  const data_dir = tempDir('aihub-txn-revisions-');
  const store = await Store.open(data_dir, {
    history_tags: PAYMENT_HISTORY_TAGS,
    checkpoint_interval_ms: 3_600_000,
    checkpoint_every_records: 150,
    now: fillNow,
  });
  await fillPayments(store, { accounts: ACCOUNTS, txns: TXNS, per_commit: 50 });
  await reviseTxns(store, REVERSED_EARLY.map(fillTxnId));
  await store.close();
  return data_dir;
}

/** What every read should say, from the reads themselves, checked against the expected statuses. */
async function observe(store: Store, reversed: readonly number[]) {
  const status = (i: number) =>
    reversed.includes(i) ? 'reversed' : i % 17 === 0 ? 'failed' : 'success';
  for (const i of [...reversed, 0, 17, 4, 599])
    assert.equal(store.get('payment_txns', fillTxnId(i))?.status, status(i), `by id: ${i}`);
  const all = await store.reads.txns({ account_id: null }, null);
  assert.equal(all.total, TXNS, 'every transaction listed once');
  assert.equal(new Set(all.rows.map((t) => t.id)).size, TXNS);
  for (const row of all.rows)
    assert.equal(row.status, status(Number.parseInt(row.id.slice(4), 16)), `listed ${row.id}`);
  const counts = async (
    account_id: string | null,
    filter: { service?: string; status?: string },
  ) => ({
    // The newest page of a status: its total comes from the tag counts alone.
    tags: (await store.reads.txns({ account_id, ...filter }, { offset: 0, limit: 5 })).total,
    // A filter that reads every row in range.
    rows: (await store.reads.txns({ account_id, ...filter, match: () => true }, null)).total,
  });
  const expected = (account: number | null, wanted: string, service?: string) =>
    Array.from({ length: TXNS }, (_, i) => i).filter(
      (i) =>
        (account === null || i % ACCOUNTS === account) &&
        status(i) === wanted &&
        (service === undefined || (i % 5 === 0 ? 'bills' : 'recharge') === service),
    ).length;
  const seen: Record<string, unknown> = {};
  for (const account of [null, 0, 1, 2, 3]) {
    const account_id = account === null ? null : fillAccount(account);
    for (const wanted of ['success', 'failed', 'reversed'] as const) {
      const n = expected(account, wanted);
      assert.deepEqual(
        await counts(account_id, { status: wanted }),
        { tags: n, rows: n },
        `${account_id ?? ALL} ${wanted}`,
      );
      const bills = expected(account, wanted, 'bills');
      assert.deepEqual(
        await counts(account_id, { status: wanted, service: 'bills' }),
        { tags: bills, rows: bills },
        `${account_id ?? ALL} bills ${wanted}`,
      );
    }
    const page = await store.reads.txns(
      { account_id, status: 'reversed' },
      { offset: 0, limit: 50 },
    );
    assert.ok(page.rows.every((t) => t.status === 'reversed'));
    seen[String(account_id)] = page.rows.map((t) => t.id);
  }
  return seen;
}

async function chunked(store: Store): Promise<string[]> {
  const ids: string[] = [];
  for await (const chunk of store.reads.txnChunks({ account_id: null, status: 'reversed' }, 'asc'))
    ids.push(...chunk.map((t) => t.id));
  return ids;
}

test(
  'a success reversed later: one entry, its newest version everywhere, across restarts, a SIGKILL, a rebuild and a repair',
  { timeout: 120_000 },
  async () => {
    const data_dir = await filled();
    try {
      // A clean restart: the revisions come from the manifest.
      let store = await Store.open(data_dir, {
        history_tags: PAYMENT_HISTORY_TAGS,
        checkpoint_interval_ms: 3_600_000,
      });
      const before = await observe(store, REVERSED_EARLY);
      assert.deepEqual(await chunked(store), REVERSED_EARLY.map(fillTxnId));
      await store.close();

      // More revisions in a process killed before any manifest names them: the journal tail.
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', CHILD, data_dir, ...REVERSED_LATE.map(fillTxnId)],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      const lines = createInterface({ input: child.stdout! });
      await new Promise<void>((done, fail) => {
        lines.on('line', (line) => line === 'done' && done());
        child.once('exit', (code) => fail(new Error(`the child exited with ${code}`)));
      });
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
      lines.close();
      const reversed = [...REVERSED_EARLY, ...REVERSED_LATE];
      store = await Store.open(data_dir, {
        history_tags: PAYMENT_HISTORY_TAGS,
        checkpoint_interval_ms: 3_600_000,
      });
      const after_kill = await observe(store, reversed);
      assert.deepEqual(await chunked(store), reversed.sort((a, b) => a - b).map(fillTxnId));
      assert.notDeepEqual(after_kill, before);
      await store.close();

      // The indexes removed: indexed again from the first record.
      rmSync(join(data_dir, INDEX_DIR), { recursive: true, force: true });
      store = await Store.open(data_dir, {
        history_tags: PAYMENT_HISTORY_TAGS,
        checkpoint_interval_ms: 3_600_000,
      });
      assert.deepEqual(await observe(store, reversed), after_kill);
      await store.close();

      // Damage: every account's list of all transactions cut short; repaired from the journal.
      const list = join(data_dir, INDEX_DIR, 'txn', `${ALL}.idx`);
      truncateSync(list, statSync(list).size - 72 * 200 - 5);
      store = await Store.open(data_dir, {
        history_tags: PAYMENT_HISTORY_TAGS,
        checkpoint_interval_ms: 3_600_000,
        warn: () => {},
      });
      assert.equal(store.archive.repaired.lists, 1);
      assert.deepEqual(await observe(store, reversed), after_kill);
      await store.close();

      const verify = await verifyDataDir(data_dir, { full: true });
      assert.equal(verify.ok, true, verify.breaches.join('; '));
    } finally {
      rmSync(data_dir, { recursive: true, force: true });
    }
  },
);
