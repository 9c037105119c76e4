// The PostgreSQL store's cache: what a load's answer may replace (no database needed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PgCache } from '../../../gateway/store/pg/cache.ts';
import { emptyState } from '../../../gateway/store/state.ts';

function cache(): PgCache {
  return new PgCache(emptyState(new Date(0).toISOString()).meta, 1_000, () => {
    throw new Error('no blocking loads in this test');
  });
}

test('a load answered after a commit of the same row does not bring the older value back', () => {
  const c = cache();
  // A load was sent while the row was at version 5; a commit then wrote version 9, and the
  // gateway's cache took it (a split transfer's leg: pending, then success).
  c.putRow('payment_txns', 'txn_1', { id: 'txn_1', status: 'success' }, 9);
  // The load's answer arrives last, with version 5.
  c.putRow('payment_txns', 'txn_1', { id: 'txn_1', status: 'pending' }, 5);
  assert.deepEqual(c.readRow('payment_txns', 'txn_1'), { id: 'txn_1', status: 'success' });
  // A newer version replaces it, as always.
  c.putRow('payment_txns', 'txn_1', { id: 'txn_1', status: 'refunded' }, 12);
  assert.deepEqual(c.readRow('payment_txns', 'txn_1'), { id: 'txn_1', status: 'refunded' });
});

test('a balance answered late does not replace a newer one', () => {
  const c = cache();
  c.putBalance('b', 'wallet:acc_1', 700, 20);
  c.putBalance('b', 'wallet:acc_1', 1_000, 11);
  assert.equal(c.readBalance('wallet:acc_1'), 700);
  c.putBalance('b', 'wallet:acc_1', 400, 21);
  assert.equal(c.readBalance('wallet:acc_1'), 400);
});
