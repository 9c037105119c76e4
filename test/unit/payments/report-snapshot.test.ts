// A report read as of one snapshot (a CSV download's count pass, then its rows pass) sees
// exactly the rows committed up to one point, whatever is committed between the two passes:
// new transactions, wallet postings, API logs and usage records are skipped, and a transaction
// pending at the snapshot and finalized after it is read once, as it was. Without the snapshot
// (the control) the rows pass does see the later commits: the race this closes is real.
// Also: the ai-usage totals are folded entry by entry (memory holds the page, never the range).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { FileStore as Store } from '../../../gateway/store/store.ts';
import type { JsonFileReads } from '../../../gateway/store/reads.ts';
import type { PaymentTxn } from '../../../gateway/payments/engine/tables.ts';
import {
  aiUsageRows,
  apiLogRows,
  commissionRows,
  reportAiUsage,
  reportApiLogs,
  reportCommissions,
  reportTransactions,
  reportWallet,
  transactionRows,
  walletRows,
  type Paging,
  type ReportResult,
  type Scope,
} from '../../../gateway/payments/reports/reports.ts';
import type { Row } from '../../../gateway/payments/shared/csv.ts';
import {
  FILL_T0_MS,
  fillAccount,
  fillClock,
  fillNow,
  fillPayments,
  fillTxn,
  fillUsage,
} from '../../support/history-fill.ts';
import { tempDir } from '../../support/temp.ts';
import { PAYMENT_HISTORY_TAGS } from '../../../gateway/payments/history-tags.ts';

const TXNS = 300;
const USAGE_T0_MS = FILL_T0_MS + TXNS * 1_000 + 1_000;
const USAGE_RECORDS = 4_000;

type Report = {
  name: string;
  count: (store: Store, paging: Paging, scope: Scope) => Promise<ReportResult>;
  rows: (store: Store, paging: Paging, scope: Scope) => AsyncGenerator<Row[]>;
  /** A row's identity. */
  id: string;
};

const REPORTS: Report[] = [
  {
    name: 'transactions',
    count: (s, p, scope) => reportTransactions(s, {}, p, scope),
    rows: (s, p, scope) => transactionRows(s, {}, p, scope, s.reads.turns.pacer()),
    id: 'txn_id',
  },
  {
    name: 'commissions',
    count: (s, p, scope) => reportCommissions(s, {}, p, scope),
    rows: (s, p, scope) => commissionRows(s, {}, p, scope, s.reads.turns.pacer()),
    id: 'txn_id',
  },
  {
    name: 'wallet',
    count: (s, p, scope) => reportWallet(s, {}, p, scope),
    rows: (s, p, scope) => walletRows(s, {}, p, scope, s.reads.turns.pacer()),
    id: 'posting_id',
  },
  {
    name: 'api-logs',
    count: (s, p, scope) => reportApiLogs(s, {}, p, scope),
    rows: (s, p, scope) => apiLogRows(s, {}, p, scope, s.reads.turns.pacer()),
    id: 'request_id',
  },
  {
    name: 'ai-usage',
    count: (s, p, scope) => reportAiUsage(s, {}, p, scope),
    rows: (s, p, scope) => aiUsageRows(s, {}, p, scope, s.reads.turns.pacer()),
    id: 'request_id',
  },
];

async function collect(batches: AsyncGenerator<Row[]>): Promise<Row[]> {
  const rows: Row[] = [];
  for await (const batch of batches) rows.push(...batch);
  return rows;
}

/** A pending transaction of `account_id` (live state), and the same one finalized. */
function pendingTxn(i: number, account_id: string): { pending: PaymentTxn; done: PaymentTxn } {
  const at = new Date(fillClock.ms).toISOString();
  const done = fillTxn(i, account_id, at, false);
  return {
    pending: { ...done, status: 'pending', stage: 'awaiting_status', finalized_at: null },
    done,
  };
}

/** Commits that come after the snapshot: more of everything, and the pending transaction finalized. */
async function commitMore(store: Store, round: number, finalize: PaymentTxn): Promise<void> {
  await fillPayments(store, { accounts: 2, txns: 6, first_index: TXNS + 100 * round });
  await store.transact((tx) => {
    tx.set('payment_txns', finalize.id, finalize);
    tx.history({
      type: 'usage',
      ts: new Date(USAGE_T0_MS + USAGE_RECORDS * 100 + round * 1_000).toISOString(),
      request_id: `req_late_${round}`,
      account_id: fillAccount(0),
      key_id: 'key_late',
      tier: 'lite',
      model: 'service-ai-lite',
      target: 'builtin',
      status: 'ok',
      stream: false,
      prompt_tokens: 1,
      completion_tokens: 1,
      cost_micros: 10,
      latency_ms: 1,
    });
  });
  await store.readDurable();
}

test(
  "a report's count and rows read as of one snapshot agree, whatever is committed between them",
  { timeout: 120_000 },
  async () => {
    const data_dir = tempDir('aihub-report-snapshot-');
    try {
      const store = await Store.open(data_dir, {
        history_tags: PAYMENT_HISTORY_TAGS,
        checkpoint_interval_ms: 3_600_000,
        now: fillNow,
      });
      await fillPayments(store, { accounts: 2, txns: TXNS, per_commit: 100 });
      await fillUsage(store, {
        accounts: 2,
        records: USAGE_RECORDS,
        per_record: 50,
        t0_ms: USAGE_T0_MS,
      });
      const account_id = fillAccount(0);
      let round = 0;
      for (const report of REPORTS)
        for (const order of ['desc', 'asc'] as const) {
          round++;
          // A transaction pending now, finalized after the snapshot.
          fillClock.ms = USAGE_T0_MS + USAGE_RECORDS * 100 + round * 1_000;
          const { pending, done } = pendingTxn(TXNS + 100 * round + 50, account_id);
          await store.transact((tx) => tx.set('payment_txns', pending.id, pending));
          await store.readDurable();
          const label = `${report.name} ${order}`;
          const all: Paging = { page: 1, limit: 100_000, order };
          const scope = { account_id, as_of: store.reads.snapshot() };
          const before = await report.count(store, all, { account_id });

          // The count pass, then commits, then the rows pass.
          const counted = await report.count(store, { ...all, limit: 0 }, scope);
          await commitMore(store, round, done);
          const rows = await collect(report.rows(store, all, scope));

          assert.equal(counted.total, before.total, label);
          assert.equal(rows.length, counted.total, `${label}: rows sent = X-Total-Count`);
          assert.deepEqual(
            rows.map((row) => row[report.id]),
            before.rows.map((row) => row[report.id]),
            `${label}: the rows as of the snapshot`,
          );
          if (report.name === 'transactions') {
            const seen = rows.filter((row) => row.txn_id === pending.id);
            assert.deepEqual(
              seen.map((row) => row.status),
              ['pending'],
              `${label}: read once, as it was`,
            );
          }
          // The control: a rows pass without the count's snapshot sees the later commits.
          const later = await collect(report.rows(store, all, { account_id }));
          assert.ok(
            later.length > rows.length,
            `${label}: ${later.length} rows now, ${rows.length} as of the snapshot`,
          );
        }
      await store.close();
    } finally {
      rmSync(data_dir, { recursive: true, force: true });
    }
  },
);

test(
  'a transaction pending at the snapshot stays pending in its rows, by a status or an id filter, after it is finalized',
  { timeout: 60_000 },
  async () => {
    const data_dir = tempDir('aihub-report-snapshot-pending-');
    try {
      const store = await Store.open(data_dir, {
        history_tags: PAYMENT_HISTORY_TAGS,
        checkpoint_interval_ms: 3_600_000,
        now: fillNow,
      });
      await fillPayments(store, { accounts: 2, txns: 20 });
      const account_id = fillAccount(0);
      fillClock.ms = FILL_T0_MS + 100_000;
      const { pending, done } = pendingTxn(1_000, account_id);
      await store.transact((tx) => tx.set('payment_txns', pending.id, pending));
      await store.readDurable();
      const all: Paging = { page: 1, limit: 1_000, order: 'desc' };
      const filters = [
        { status: 'pending' as const },
        { status: 'pending' as const, txn_id: pending.id },
        { txn_id: pending.id },
        { number: pending.subject },
      ];
      const scopes = filters.map(() => ({ account_id, as_of: store.reads.snapshot() }));
      const counts = await Promise.all(
        filters.map((filter, i) =>
          reportTransactions(store, filter, { ...all, limit: 0 }, scopes[i]!),
        ),
      );
      await store.transact((tx) => tx.set('payment_txns', done.id, done));
      await store.readDurable();
      for (const [i, filter] of filters.entries()) {
        const label = JSON.stringify(filter);
        const rows = await collect(
          transactionRows(store, filter, all, scopes[i]!, store.reads.turns.pacer()),
        );
        assert.equal(counts[i]!.total, 1, label);
        assert.deepEqual(
          rows.map((row) => [row.txn_id, row.status]),
          [[pending.id, 'pending']],
          `${label}: the row as of the count`,
        );
      }
      // Read now, it is final.
      const now = await reportTransactions(store, { txn_id: pending.id }, all, { account_id });
      assert.deepEqual(
        now.rows.map((row) => row.status),
        ['success'],
      );
      await store.close();
    } finally {
      rmSync(data_dir, { recursive: true, force: true });
    }
  },
);

test(
  'ai-usage totals are folded entry by entry: the same answers, and no more entries held than the page',
  { timeout: 120_000 },
  async () => {
    const data_dir = tempDir('aihub-usage-totals-');
    try {
      const store = await Store.open(data_dir, {
        history_tags: PAYMENT_HISTORY_TAGS,
        checkpoint_interval_ms: 3_600_000,
        now: fillNow,
      });
      await fillPayments(store, { accounts: 2, txns: 2 }); // the accounts' funds
      await fillUsage(store, {
        accounts: 2,
        records: USAGE_RECORDS,
        per_record: 50,
        t0_ms: USAGE_T0_MS,
      });
      await store.readDurable();
      const reads = store.reads as JsonFileReads;
      const account_id = fillAccount(0);
      const count = USAGE_RECORDS / 2;
      const scope = { account_id };
      // Every record of fillUsage costs 1,200 micros for 100 + 20 tokens.
      const totals = { count, cost: (count * 1_200) / 1e6, tokens: count * 120 };

      assert.equal(reads.kept_most, 0);
      const only = await reportAiUsage(store, {}, { page: 1, limit: 0, order: 'desc' }, scope);
      assert.deepEqual(only.totals, totals);
      assert.equal(only.total, count);
      assert.equal(reads.kept_most, 0, 'a count keeps no entries');

      for (const order of ['desc', 'asc'] as const) {
        const paging = { page: 3, limit: 10, order };
        const page = await reportAiUsage(store, {}, paging, scope);
        assert.deepEqual(page.totals, totals, order);
        // The page is the streamed rows' page (the same selection, no totals).
        const streamed = await collect(aiUsageRows(store, {}, paging, scope, reads.turns.pacer()));
        assert.deepEqual(page.rows, streamed, order);
        assert.equal(page.rows.length, 10);
        // A filter that reads each record: every one matches `ok`, none `stream_error`.
        const filtered = await reportAiUsage(store, { status: 'ok' }, paging, scope);
        assert.deepEqual(filtered.totals, totals, `${order}, filtered`);
        assert.deepEqual(
          (await reportAiUsage(store, { status: 'stream_error' }, paging, scope)).totals,
          { count: 0, cost: 0, tokens: 0 },
        );
      }
      // Newest first holds the page and what follows it, trimmed now and then: bounded by the
      // page (3 × 10 rows), never by the 2,000 entries in range.
      assert.ok(reads.kept_most > 0);
      assert.ok(reads.kept_most <= 2 * 30 + 1024, `${reads.kept_most} entries held at most`);
      assert.ok(reads.kept_most < count);
      await store.close();
    } finally {
      rmSync(data_dir, { recursive: true, force: true });
    }
  },
);
