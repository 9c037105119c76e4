import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Store } from '../../gateway/store/store.ts';
import {
  FUNDING_TOPUP,
  LedgerError,
  balanceMicros,
  captureHold,
  creditWallet,
  heldMicros,
  openHold,
  voidHold,
  InsufficientBalanceError,
} from '../../gateway/ledger/ledger.ts';
import { InvariantError } from '../../gateway/store/state.ts';
import { verifyDataDir } from '../../gateway/store/verify.ts';
import { tempDir } from '../support/temp.ts';

async function funded(amount_micros: number) {
  const data_dir = tempDir('aihub-ledger-');
  const store = await Store.open(data_dir);
  await store.transact((tx) =>
    creditWallet(tx, { account_id: 'a', amount_micros, from: FUNDING_TOPUP, memo: 'top-up' }),
  );
  return { store, data_dir };
}

test('a hold reserves money; capture pays part and releases the rest, exactly once', async () => {
  const { store, data_dir } = await funded(10_000_000);
  const hold = await store.transact((tx) =>
    openHold(tx, { account_id: 'a', amount_micros: 4_000_000, purpose: 'chat' }),
  );
  assert.equal(balanceMicros(store.state, 'a'), 6_000_000);
  assert.equal(heldMicros(store.state, 'a'), 4_000_000);
  await store.transact((tx) =>
    captureHold(tx, hold.id, { amount_micros: 1_250_000, to: 'revenue:ai', memo: 'chat' }),
  );
  assert.equal(balanceMicros(store.state, 'a'), 8_750_000);
  assert.equal(heldMicros(store.state, 'a'), 0);
  assert.equal(store.state.balances['revenue:ai'], 1_250_000);
  await assert.rejects(
    store.transact((tx) =>
      captureHold(tx, hold.id, { amount_micros: 1, to: 'revenue:ai', memo: 'again' }),
    ),
    LedgerError,
  );
  await assert.rejects(
    store.transact((tx) => voidHold(tx, hold.id, 'again')),
    LedgerError,
  );
  await store.close();
  assert.equal((await verifyDataDir(data_dir)).ok, true);
});

test('void returns the whole hold; a capture above the hold is refused', async () => {
  const { store } = await funded(3_000_000);
  const hold = await store.transact((tx) =>
    openHold(tx, { account_id: 'a', amount_micros: 3_000_000, purpose: 'recharge' }),
  );
  await assert.rejects(
    store.transact((tx) =>
      captureHold(tx, hold.id, { amount_micros: 3_000_001, to: 'revenue:x', memo: '' }),
    ),
    LedgerError,
  );
  await assert.rejects(
    store.transact((tx) => openHold(tx, { account_id: 'a', amount_micros: 1, purpose: 'more' })),
    InsufficientBalanceError,
  );
  await store.transact((tx) => voidHold(tx, hold.id, 'declined'));
  assert.equal(balanceMicros(store.state, 'a'), 3_000_000);
  const sum = Object.values(store.state.balances).reduce((a, b) => a + b, 0);
  assert.equal(sum, 0);
  await store.close();
});

test('the reducer refuses an unbalanced posting and a wallet below zero', async () => {
  const { store } = await funded(1_000_000);
  await assert.rejects(
    store.transact((tx) =>
      tx.post({
        id: 'p',
        ts: '',
        memo: '',
        account_id: 'a',
        entries: [
          ['wallet:a', -1],
          ['revenue:x', 2],
        ],
      }),
    ),
    InvariantError,
  );
  await assert.rejects(
    store.transact((tx) =>
      tx.post({
        id: 'p',
        ts: '',
        memo: '',
        account_id: 'a',
        entries: [
          ['wallet:a', -2_000_000],
          ['revenue:x', 2_000_000],
        ],
      }),
    ),
    InvariantError,
  );
  await assert.rejects(
    store.transact((tx) =>
      tx.post({
        id: 'p',
        ts: '',
        memo: '',
        account_id: 'a',
        entries: [
          ['wallet:a', -0.5],
          ['revenue:x', 0.5],
        ],
      }),
    ),
    /not an integer/,
  );
  assert.equal(balanceMicros(store.state, 'a'), 1_000_000);
  await store.close();
});
