// Wallet and API-log reports over every account's whole history take turns with other work as
// the transactions report does (a chunk of index entries per turn of the event loop), and
// answer exactly what the same read answered at once answers. Asserted by order, not time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { Store } from '../../../gateway/store/store.ts';
import { reportApiLogs, reportWallet } from '../../../gateway/payments/reports/reports.ts';
import { fillNow, fillPayments } from '../../support/history-fill.ts';
import { tempDir } from '../../support/temp.ts';

/** Runs `report` while a chain of setImmediate callbacks counts turns; returns the order of events. */
async function beside<T>(
  report: () => Promise<T>,
): Promise<{ result: T; order: string[]; turns: number }> {
  const order: string[] = [];
  let turns = 0;
  const running = report().then((result) => {
    order.push('report');
    return result;
  });
  const other = new Promise<void>((resolve) => {
    const tick = () => {
      turns++;
      if (!order.includes('other request')) order.push('other request');
      if (order.includes('report')) resolve();
      else setImmediate(tick);
    };
    setImmediate(tick);
  });
  const [result] = await Promise.all([running, other]);
  return { result, order, turns };
}

test(
  'wallet and API-log reports of every account over the whole history take turns, with exact answers',
  { timeout: 120_000 },
  async () => {
    const data_dir = tempDir('aihub-report-turns-');
    try {
      const store = await Store.open(data_dir, { checkpoint_interval_ms: 3_600_000, now: fillNow });
      await fillPayments(store, { accounts: 5, txns: 3_000, per_commit: 500, step_ms: 1_000 });
      await store.readDurable();
      const everyone = { account_id: null, admin: true };
      const paging = { page: 2, limit: 25, order: 'desc' as const };

      const at_once = await store.reads.wallet(
        { account_id: null },
        { offset: 25, limit: 25 },
        'desc',
      );
      assert.ok(at_once.total > 3 * 512, `${at_once.total} postings: several chunks`);
      const wallet = await beside(() => reportWallet(store, {}, paging, everyone));
      assert.deepEqual(wallet.order, ['other request', 'report']);
      // One turn at least per chunk of entries walked (a report walking in one go sees two).
      assert.ok(wallet.turns > 3, `the event loop turned ${wallet.turns} times`);
      assert.equal(wallet.result.total, at_once.total);
      assert.deepEqual(
        wallet.result.rows.map((r) => r.posting_id),
        at_once.rows.map((line) => line.posting.id),
      );

      const logs_at_once = await store.reads.apiLogs(
        { account_id: null },
        { offset: 25, limit: 25 },
        'desc',
      );
      assert.ok(logs_at_once.total > 3 * 512, `${logs_at_once.total} log records`);
      const logs = await beside(() => reportApiLogs(store, {}, paging, everyone));
      assert.deepEqual(logs.order, ['other request', 'report']);
      assert.ok(logs.turns > 3, `the event loop turned ${logs.turns} times`);
      assert.equal(logs.result.total, logs_at_once.total);
      assert.deepEqual(
        logs.result.rows.map((r) => r.request_id),
        logs_at_once.rows.map((record) => record.request_id ?? null),
      );

      // Two reports at once take turns with each other too: both finish, with the same answers.
      const [w, l] = await Promise.all([
        store.reads.walletInTurns({ account_id: null }, null, 'asc'),
        store.reads.apiLogsInTurns({ account_id: null }, null, 'asc'),
      ]);
      assert.equal(w.total, at_once.total);
      assert.equal(w.rows.length, at_once.total);
      assert.equal(l.total, logs_at_once.total);
      await store.close();
    } finally {
      rmSync(data_dir, { recursive: true, force: true });
    }
  },
);
