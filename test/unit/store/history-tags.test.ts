// The history indexes tag records with what the rooms describe (store/history-tags.ts), not
// with names the store knows: a store opened with another description files and filters by
// it, and the payments room's description keeps every code the indexes have on disk.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { Store } from '../../../gateway/store/store.ts';
import {
  logAux,
  txnTag,
  txnTagParts,
  type HistoryTags,
} from '../../../gateway/store/history-tags.ts';
import { PAYMENT_HISTORY_TAGS } from '../../../gateway/payments/history-tags.ts';
import { tempDir } from '../../support/temp.ts';

/** A room of two services the store has never heard of. */
const OTHER_TAGS: HistoryTags = {
  services: ['water-taxi', 'ferry'],
  statuses: ['pending', 'success', 'failed'],
  logService: (record) =>
    typeof record.path === 'string' && record.path.startsWith('/api/ferry/') ? 'ferry' : null,
};

test('a store files and filters history by the tags the rooms give it at open', async () => {
  const data_dir = tempDir('aihub-history-tags-');
  try {
    const open = () => Store.open(data_dir, { history_tags: OTHER_TAGS });
    let store = await open();
    await store.transact((tx) => {
      for (let i = 0; i < 6; i++) {
        const at = new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
        tx.set('payment_txns', `t${i}`, {
          id: `t${i}`,
          account_id: 'acc_1',
          service: i % 3 === 0 ? 'ferry' : 'water-taxi',
          status: i % 2 === 0 ? 'success' : 'failed',
          stage: 'final',
          amount_micros: 1_000_000,
          created_at: at,
          updated_at: at,
          finalized_at: at,
        } as never);
        tx.history({
          type: 'api_log',
          ts: at,
          account_id: 'acc_1',
          method: 'POST',
          path: i % 3 === 0 ? '/api/ferry/book' : '/api/water-taxi/book',
          status: 200,
          latency_ms: 1,
        });
      }
    });
    for (const reopen of [false, true]) {
      if (reopen) {
        await store.close();
        store = await open();
      }
      const page = { offset: 0, limit: 10 };
      const ferries = await store.reads.txns({ account_id: null, service: 'ferry' }, page);
      assert.deepEqual(
        ferries.rows.map((row) => row.id),
        ['t3', 't0'],
      );
      assert.equal(ferries.total, 2);
      const failed_taxis = await store.reads.txns(
        { account_id: 'acc_1', service: 'water-taxi', status: 'failed' },
        page,
      );
      assert.deepEqual(
        failed_taxis.rows.map((row) => row.id),
        ['t5', 't1'],
      );
      const logs = await store.reads.apiLogs(
        { account_id: 'acc_1', service: 'ferry' },
        page,
        'asc',
      );
      assert.deepEqual(
        logs.rows.map((record) => record.path),
        ['/api/ferry/book', '/api/ferry/book'],
      );
    }
    await store.close();
  } finally {
    rmSync(data_dir, { recursive: true, force: true });
  }
});

test('the payments room’s tags keep the codes the indexes were written with (append only)', () => {
  const tags = PAYMENT_HISTORY_TAGS;
  // The first index's layout: (service + 1) * 4 + status + 1 for the first three statuses,
  // 20 + (service + 1) * 4 + (status - 3) for the later ones.
  const expected: Array<[string, string, number]> = [
    ['recharge', 'pending', 5],
    ['recharge', 'success', 6],
    ['dmt', 'failed', 11],
    ['pan', 'success', 14],
    ['bills', 'pending', 17],
    ['recharge', 'refunded', 24],
    ['dmt', 'reversed', 29],
    ['pan', 'refund_pending', 34],
    ['bills', 'on_hold', 39],
    ['unknown', 'success', 2],
    ['bills', 'unknown', 16],
  ];
  for (const [service, status, tag] of expected) {
    assert.equal(txnTag(tags, service, status), tag, `${service} ${status}`);
    const [service_code, status_code] = txnTagParts(tag);
    assert.equal(service_code, tags.services.indexOf(service) + 1);
    assert.equal(status_code, tags.statuses.indexOf(status) + 1);
  }
  // API logs: method * 8 + service, the service by path.
  const log = (method: string, path: string) =>
    logAux(tags, { type: 'api_log', ts: '', method, path });
  assert.equal(log('POST', '/api/recharge'), 2 * 8 + 1);
  assert.equal(log('GET', '/api/operators'), 1 * 8 + 1);
  assert.equal(log('POST', '/api/dmt/transact'), 2 * 8 + 2);
  assert.equal(log('POST', '/api/pan-find'), 2 * 8 + 3);
  assert.equal(log('GET', '/api/bills/billers'), 1 * 8 + 4);
  assert.equal(log('GET', '/api/wallet/balance'), 1 * 8 + 0);
  assert.equal(log('PATCH', '/v1/key'), 5 * 8 + 0);
});
