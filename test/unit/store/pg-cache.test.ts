// The PostgreSQL store's cache: what a load's answer may replace (no database needed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BatchState, PgCache, Run } from '../../../gateway/store/pg/cache.ts';
import { balanceKey, rowKey } from '../../../gateway/store/pg/keys.ts';
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

test('a load sent before this gateway deleted a row does not bring the row back', () => {
  const c = cache();
  c.putRow('sessions', 'ses_1', { id: 'ses_1' }, 7);
  const sent = c.load_seq; // a load of ses_1 leaves now (its snapshot may predate the delete)
  // This gateway's commit deleting the row is answered (a batch's answer moves the sequence).
  c.load_seq++;
  c.putCommitted('sessions', 'ses_1', 0, null);
  assert.equal(c.readRow('sessions', 'ses_1'), undefined);
  // The load's answer arrives last, with the row as it was before the delete.
  c.load_seq++;
  c.putRow('sessions', 'ses_1', { id: 'ses_1' }, 7, sent);
  assert.equal(c.readRow('sessions', 'ses_1'), undefined, 'the deleted row came back');
  // A load sent after the delete's answer says what the database holds now (written again
  // by another gateway, under a new version): it is taken.
  c.putRow('sessions', 'ses_1', { id: 'ses_1', again: true }, 15, c.load_seq);
  assert.deepEqual(c.readRow('sessions', 'ses_1'), { id: 'ses_1', again: true });
  // A commit writing the row again clears the mark.
  c.load_seq++;
  c.putCommitted('sessions', 'ses_1', 0, null);
  c.putCommitted('sessions', 'ses_1', 16, JSON.stringify({ id: 'ses_1', third: true }));
  c.putRow('sessions', 'ses_1', { id: 'ses_1', fourth: true }, 17, 0);
  assert.deepEqual(c.readRow('sessions', 'ses_1'), { id: 'ses_1', fourth: true });
});

test('an index set answered late does not replace a newer one', () => {
  const c = cache();
  c.putSet('api_keys', 'account_id', 'acc_1', new Set(['key_1', 'key_2']), 30);
  c.putSet('api_keys', 'account_id', 'acc_1', new Set(['key_1']), 22);
  assert.deepEqual([...c.readIndex('api_keys', 'account_id', 'acc_1')].sort(), ['key_1', 'key_2']);
  c.putSet('api_keys', 'account_id', 'acc_1', new Set(['key_1']), 0);
  assert.deepEqual([...c.readIndex('api_keys', 'account_id', 'acc_1')].sort(), ['key_1', 'key_2']);
  c.putSet('api_keys', 'account_id', 'acc_1', new Set(['key_3']), 31);
  assert.deepEqual([...c.readIndex('api_keys', 'account_id', 'acc_1')], ['key_3']);
});

test('a refusal over a counter its own run changed is checked by the commit at the base version', () => {
  const c = cache();
  c.putBalance('b', 'wallet:acc_1', 1_000, 3);
  // The account's reservations as this gateway last loaded them (another gateway may have
  // released some since: the cached base is then stale, and only the commit can tell).
  c.putRow('chat_reserved', 'acc_1', 1_000, 4);
  const run = new Run('tx', 0, new BatchState());
  c.current = run;
  try {
    // A settlement drops its own reservation, then debits what the answer cost.
    c.addCounter(run, 'chat_reserved', 'acc_1', -300);
    assert.equal(c.covers('wallet:acc_1', 400, [['chat_reserved', 'acc_1']]), false);
  } finally {
    c.current = null;
  }
  // Refused on the cached values (1,000 less 700 still held < 400): the commit must check
  // both cells' versions, so that a stale base runs the settlement again instead of
  // answering a refusal (a multi-gateway flood answered one with "unexpected error").
  assert.equal(run.reads.get(rowKey('chat_reserved', 'acc_1')), 4);
  assert.equal(run.reads.get(balanceKey('wallet:acc_1')), 3);
});
