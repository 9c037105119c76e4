// A long report (every account, the whole history) lets the event loop run between chunks of
// its rows, so other requests are answered while it runs; its totals and pages are those of
// the whole selection, in created order both ways.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { Store } from '../../../gateway/store/store.ts';
import {
  reportCommissions,
  reportTransactions,
} from '../../../gateway/payments/reports/reports.ts';
import { fillNow, fillPayments } from '../../support/history-fill.ts';
import { tempDir } from '../../support/temp.ts';
import { PAYMENT_HISTORY_TAGS } from '../../../gateway/payments/history-tags.ts';

test(
  'a report of every account over the whole history yields to other work, and pages and totals are exact',
  { timeout: 120_000 },
  async () => {
    const data_dir = tempDir('aihub-report-yields-');
    try {
      const store = await Store.open(data_dir, {
        history_tags: PAYMENT_HISTORY_TAGS,
        checkpoint_interval_ms: 3_600_000,
        now: fillNow,
      });
      await fillPayments(store, {
        accounts: 7,
        txns: 5_000,
        per_commit: 500,
        lean: true,
        step_ms: 1_000,
      });
      const all = (await store.reads.txns({ account_id: null }, null)).rows;
      assert.equal(all.length, 5_000);

      // Other work queued once the report has begun runs before it ends: the event loop turned.
      const order: string[] = [];
      const report = reportTransactions(
        store,
        {},
        { page: 3, limit: 40, order: 'desc' },
        { account_id: null, admin: true },
      ).then((result) => {
        order.push('report');
        return result;
      });
      let turns = 0;
      const other = new Promise<void>((resolve) => {
        const tick = () => {
          turns++;
          if (turns === 1) order.push('other request');
          if (order.includes('report')) resolve();
          else setImmediate(tick);
        };
        setImmediate(tick);
      });
      const [result] = await Promise.all([report, other]);
      assert.deepEqual(order, ['other request', 'report']);
      assert.ok(turns > 10, `the event loop turned ${turns} times during the report`);

      assert.equal(result.total, 5_000);
      assert.deepEqual(
        result.rows.map((r) => r.txn_id),
        all.slice(80, 120).map((t) => t.id),
        'page 3, newest created first',
      );
      const failed = all.filter((t) => t.status === 'failed').length;
      assert.deepEqual((result.totals as { by_status: unknown }).by_status, {
        success: 5_000 - failed,
        pending: 0,
        failed,
        on_hold: 0,
        refund_pending: 0,
        refunded: 0,
        reversed: 0,
      });
      const asc = await reportTransactions(
        store,
        {},
        { page: 2, limit: 30, order: 'asc' },
        { account_id: null, admin: true },
      );
      assert.deepEqual(
        asc.rows.map((r) => r.txn_id),
        all
          .slice()
          .reverse()
          .slice(30, 60)
          .map((t) => t.id),
        'oldest first',
      );
      const commissions = await reportCommissions(
        store,
        { service: 'recharge' },
        { page: 1, limit: 10, order: 'desc' },
        { account_id: null, admin: true },
      );
      const recharged = all.filter(
        (t) => t.service === 'recharge' && t.status === 'success' && t.commission_micros > 0,
      );
      assert.equal(commissions.total, recharged.length);
      assert.deepEqual(
        commissions.rows.map((r) => r.txn_id),
        recharged.slice(0, 10).map((t) => t.id),
      );
      await store.close();
    } finally {
      rmSync(data_dir, { recursive: true, force: true });
    }
  },
);
