// The admin-wide lists cost what they return: the total of every account's transactions of a
// status, or of audit records of one action, is kept beside the indexes, and the page reads
// about its own entries, not the whole history.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { Store } from '../../../gateway/store/store.ts';
import { fillNow, fillPayments, fillTxnId } from '../../support/history-fill.ts';
import { tempDir } from '../../support/temp.ts';
import { PAYMENT_HISTORY_TAGS } from '../../../gateway/payments/history-tags.ts';

const TXNS = 6_800;

test(
  'all accounts: the failed transactions and one action of the audit log, totals without a walk and pages that read their entries',
  { timeout: 120_000 },
  async () => {
    const data_dir = tempDir('aihub-admin-lists-');
    try {
      let store = await Store.open(data_dir, {
        history_tags: PAYMENT_HISTORY_TAGS,
        checkpoint_interval_ms: 3_600_000,
        now: fillNow,
      });
      await fillPayments(store, { accounts: 40, txns: TXNS, per_commit: 400, lean: true });
      // 3,000 audit records, one in 100 of them a kyc.approve.
      await store.transact((tx) => {
        for (let i = 0; i < 3_000; i++)
          tx.history({
            type: 'audit',
            ts: fillNow().toISOString(),
            actor: 'admin',
            action: i % 100 === 7 ? 'kyc.approve' : 'account.update',
            account_id: `acc_${i % 50}`,
            details: { i },
          });
      });
      for (const reopen of [false, true]) {
        if (reopen) {
          await store.close();
          store = await Store.open(data_dir, {
            history_tags: PAYMENT_HISTORY_TAGS,
            checkpoint_interval_ms: 3_600_000,
          });
        }
        const failed = Array.from({ length: TXNS }, (_, i) => i).filter((i) => i % 17 === 0);
        let before = { ...store.archive.counters };
        const page = await store.reads.txns(
          { account_id: null, status: 'failed' },
          { offset: 0, limit: 20 },
        );
        assert.equal(page.total, failed.length);
        assert.deepEqual(
          page.rows.map((t) => t.id),
          failed.slice(-20).reverse().map(fillTxnId),
          'the newest failed transactions, newest first',
        );
        // 17 entries per failed transaction are walked from the newest end (and never the whole list).
        assert.ok(
          store.archive.counters.entries - before.entries <= 20 * 17 + 512,
          `${store.archive.counters.entries - before.entries} entries read of ${TXNS}`,
        );
        assert.equal(store.archive.counters.records - before.records, 20);
        const bills = await store.reads.txns(
          { account_id: null, service: 'bills', status: 'success' },
          { offset: 20, limit: 10 },
        );
        assert.equal(
          bills.total,
          Array.from({ length: TXNS }, (_, i) => i).filter((i) => i % 5 === 0 && i % 17 !== 0)
            .length,
        );
        assert.equal(bills.rows.length, 10);

        before = { ...store.archive.counters };
        const audit = await store.reads.audit(
          { account_id: null, action: 'kyc.approve' },
          { offset: 5, limit: 10 },
        );
        assert.equal(audit.total, 30);
        assert.deepEqual(
          audit.rows.map((r) => (r.details as { i: number }).i),
          Array.from({ length: 10 }, (_, k) => 2_907 - (5 + k) * 100),
        );
        assert.equal(
          store.archive.counters.entries - before.entries,
          10,
          'the page reads its 10 entries',
        );
        assert.equal(store.archive.counters.records - before.records, 10);
      }
      await store.close();
    } finally {
      rmSync(data_dir, { recursive: true, force: true });
    }
  },
);
