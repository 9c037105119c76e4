// A long report does not hold the gateway: while an administrator's transactions report over
// every account's whole history (20,000 transactions) is being computed, requests on the chat
// path, each sent after the one before was answered, are answered one after another. The
// assertion is on order (how many were answered before the report was), not on durations.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Store } from '../../gateway/store/store.ts';
import { fillNow, fillPayments } from '../support/history-fill.ts';
import { admin, createFundedAccount, request, startGateway, tempDir } from './helpers.ts';
import { PAYMENT_HISTORY_TAGS } from '../../gateway/payments/history-tags.ts';

const TXNS = 20_000;

test(
  'requests on the chat path are answered while a report of every account over 20,000 transactions runs',
  { timeout: 300_000 },
  async () => {
    const data_dir = tempDir('aihub-report-beside-chat-');
    const store = await Store.open(data_dir, {
      history_tags: PAYMENT_HISTORY_TAGS,
      now: fillNow,
      checkpoint_interval_ms: 3_600_000,
    });
    await fillPayments(store, { accounts: 20, txns: TXNS, per_commit: 1_000, lean: true });
    await store.close();
    const gateway = await startGateway({ data_dir, timeout_ms: 60_000 });
    try {
      const { key } = await createFundedAccount(gateway);
      let report_done = false;
      const report = admin(gateway)
        .get<{ total: number; rows: unknown[] }>('/admin/reports/transactions?limit=50')
        .then((reply) => {
          report_done = true;
          return reply;
        });
      let answered_before = 0;
      while (!report_done) {
        const models = await request(`${gateway.url}/v1/models`, {
          headers: { authorization: `Bearer ${key}` },
        });
        assert.equal(models.status, 200);
        if (!report_done) answered_before++;
      }
      const reply = await report;
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.equal(reply.body.total, TXNS);
      assert.equal(reply.body.rows.length, 50);
      assert.ok(
        answered_before >= 10,
        `${answered_before} chat-path requests were answered, one after another, before the report was`,
      );
    } finally {
      await gateway.stop();
    }
  },
);
