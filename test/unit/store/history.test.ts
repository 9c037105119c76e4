// History on disk: a store with a business's years of payment transactions closes and
// reopens unchanged, with nothing of that history in its live document; a brand-new
// account's reports read no history at all, and a one-day report reads that day's rows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Store, STATE_FILE } from '../../../gateway/store/store.ts';
import { verifyDataDir } from '../../../gateway/store/verify.ts';
import {
  reportApiLogs,
  reportCommissions,
  reportTransactions,
  reportWallet,
} from '../../../gateway/payments/reports/reports.ts';
import {
  FILL_T0_MS,
  fillAccount,
  fillNow,
  fillPayments,
  fillTxnId,
  fillUsage,
} from '../../support/history-fill.ts';
import { tempDir } from '../../support/temp.ts';

/** 600,000 by default, the size that could not restart before; AIHUB_TEST_HISTORY_TXNS sets another. */
const TXNS = Number(process.env.AIHUB_TEST_HISTORY_TXNS ?? 600_000);
/** 600 transactions per account (1,000 accounts at the full size). */
const ACCOUNTS = Math.max(10, Math.round(TXNS / 600));

test(
  `${TXNS.toLocaleString('en')} realistic payment transactions: the store closes and reopens with balances and newest pages unchanged`,
  { timeout: 900_000 },
  async () => {
    const data_dir = tempDir('aihub-history-big-');
    try {
      const store = await Store.open(data_dir, { checkpoint_interval_ms: 3_600_000 });
      await fillPayments(store, { accounts: ACCOUNTS, txns: TXNS, per_commit: 2_000, lean: true });
      assert.equal(
        Object.keys(store.rows('payment_txns')).length,
        0,
        'no finalized transaction stays in the live document',
      );
      const sample = [0, 1, 7, Math.min(499, ACCOUNTS - 2), ACCOUNTS - 1].map(fillAccount);
      const before = {
        balances: { ...store.state.balances },
        pages: await Promise.all(
          sample.map((account_id) => store.reads.txns({ account_id }, { offset: 0, limit: 50 })),
        ),
        wallets: await Promise.all(
          sample.map((account_id) =>
            store.reads.wallet({ account_id }, { offset: 0, limit: 20 }, 'desc'),
          ),
        ),
        all: await store.reads.txns({ account_id: null }, { offset: 0, limit: 50 }),
        by_id: [0, 1, TXNS - 1, Math.floor(TXNS / 2)].map((i) =>
          store.get('payment_txns', fillTxnId(i)),
        ),
      };
      assert.equal(before.pages[0]!.total, Math.ceil(TXNS / ACCOUNTS));
      assert.equal(before.pages[0]!.rows.length, 50);
      assert.deepEqual(
        before.pages[0]!.rows.map((t) => t.id),
        Array.from({ length: 50 }, (_, k) =>
          fillTxnId(Math.floor((TXNS - 1) / ACCOUNTS) * ACCOUNTS - k * ACCOUNTS),
        ),
        'the newest page of account 0: its newest transactions, newest first',
      );
      assert.equal(before.all.total, TXNS);
      assert.equal(before.all.rows[0]!.id, fillTxnId(TXNS - 1));
      for (const [k, txn] of before.by_id.entries())
        assert.equal(txn?.id, fillTxnId([0, 1, TXNS - 1, Math.floor(TXNS / 2)][k]!));
      assert.equal(before.wallets[0]!.closing_micros, store.state.balances[`wallet:${sample[0]}`]);
      await store.close();

      // The checkpoint holds live state only: balances and accounts' rows, not history.
      const checkpoint_bytes = statSync(join(data_dir, STATE_FILE)).size;
      assert.ok(checkpoint_bytes < 1_000_000, `the checkpoint is ${checkpoint_bytes} bytes`);

      const reopened = await Store.open(data_dir, { checkpoint_interval_ms: 3_600_000 });
      try {
        assert.deepEqual(reopened.state.balances, before.balances);
        assert.equal(
          reopened.archive.seq,
          reopened.state.seq,
          'the indexes were durable at close: nothing to mend',
        );
        const counters = { ...reopened.archive.counters };
        assert.deepEqual(
          await Promise.all(
            sample.map((account_id) =>
              reopened.reads.txns({ account_id }, { offset: 0, limit: 50 }),
            ),
          ),
          before.pages,
        );
        assert.deepEqual(
          await Promise.all(
            sample.map((account_id) =>
              reopened.reads.wallet({ account_id }, { offset: 0, limit: 20 }, 'desc'),
            ),
          ),
          before.wallets,
        );
        assert.deepEqual(
          await reopened.reads.txns({ account_id: null }, { offset: 0, limit: 50 }),
          before.all,
        );
        assert.deepEqual(
          [0, 1, TXNS - 1, Math.floor(TXNS / 2)].map((i) =>
            reopened.get('payment_txns', fillTxnId(i)),
          ),
          before.by_id,
        );
        // A newest page reads about its own rows, however long the history behind it.
        const records_read = reopened.archive.counters.records - counters.records;
        assert.ok(
          records_read <= 5 * 50 + 5 * 20 + 50 + 4 + 50,
          `${records_read} records read for these pages`,
        );
      } finally {
        await reopened.close();
      }
    } finally {
      rmSync(data_dir, { recursive: true, force: true });
    }
  },
);

test(
  "a brand-new account's reports answer from the index without reading history; a one-day report reads that day's rows",
  { timeout: 300_000 },
  async () => {
    const data_dir = tempDir('aihub-history-reports-');
    try {
      const store = await Store.open(data_dir, { checkpoint_interval_ms: 3_600_000, now: fillNow });
      // 20,000 transactions over 20 accounts, one every 60 s (about 14 days), and chat usage.
      await fillPayments(store, { accounts: 20, txns: 20_000, per_commit: 100, step_ms: 60_000 });
      await fillUsage(store, { accounts: 20, records: 20_000, per_commit: 100, step_ms: 60_000 });
      const paging = { page: 1, limit: 50, order: 'desc' as const };
      const fresh = { account_id: 'acc_brand_new' };
      const { entries, records } = store.archive.counters;
      const reports = [
        await reportTransactions(store, {}, paging, fresh),
        await reportCommissions(store, {}, paging, fresh),
        await reportWallet(store, {}, paging, fresh),
        await reportApiLogs(store, {}, paging, fresh),
      ];
      for (const report of reports) assert.equal(report.total, 0, report.report);
      assert.equal(store.archive.counters.records - records, 0, 'no history record was read');
      assert.equal(store.archive.counters.entries - entries, 0, 'no index entry was read');

      // One day of one account: 1,440 transactions a day over 20 accounts is 72 of account 3's.
      const day_from = FILL_T0_MS + 5 * 86_400_000;
      const one_day = { from: day_from, to: day_from + 86_400_000 - 1 };
      const busy = { account_id: fillAccount(3) };
      const before_day = { ...store.archive.counters };
      const day = await reportTransactions(
        store,
        one_day,
        { page: 1, limit: 500, order: 'desc' },
        busy,
      );
      assert.equal(day.total, 72);
      const day_records = store.archive.counters.records - before_day.records;
      assert.equal(day_records, 72, 'the report read the rows of that day, and only those');
      assert.ok(
        store.archive.counters.entries - before_day.entries < 72 + 64,
        'and about as many index entries (plus a binary search)',
      );
      const wallet_before = { ...store.archive.counters };
      const wallet = await reportWallet(
        store,
        one_day,
        { page: 1, limit: 10, order: 'desc' },
        busy,
      );
      assert.ok(wallet.total >= 72 * 2, `${wallet.total} wallet movements that day`);
      assert.ok(
        store.archive.counters.records - wallet_before.records <= 2 * 10,
        'the wallet report reads the rows of its page (each posting and its transaction); its totals come from the index',
      );
      const usage = await store.reads.dailySpend(fillAccount(3), day_from, 1);
      assert.equal(usage[0]!.get('lite'), 72 * 1_200, "a day's chat spend from the index");
      await store.close();
      const verify = await verifyDataDir(data_dir);
      assert.equal(verify.ok, true, verify.breaches.join('\n'));
    } finally {
      rmSync(data_dir, { recursive: true, force: true });
    }
  },
);
