// The payment engine on a real store with a scripted provider and a fake clock: status
// checks back off (capped) and stop after max_checks without touching the money: the
// transaction goes on hold for an operator, who re-arms its checks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount } from '../../../gateway/accounts/accounts.ts';
import {
  FUNDING_TOPUP,
  balanceMicros,
  creditWallet,
  heldMicros,
} from '../../../gateway/ledger/ledger.ts';
import { createLogger } from '../../../gateway/log.ts';
import { paymentsConfigSchema } from '../../../gateway/payments/config.ts';
import { PaymentEngine } from '../../../gateway/payments/engine/engine.ts';
import { renderRecharge } from '../../../gateway/payments/recharge/views.ts';
import type { PaymentProvider } from '../../../gateway/providers/types.ts';
import { Store } from '../../../gateway/store/store.ts';
import { tempDir } from '../../support/temp.ts';

test('status checks back off, are capped, and stop after max_checks with the hold intact: on hold until re-checked', async () => {
  let now_ms = Date.parse('2025-01-01T00:00:00Z');
  const clock = { now: () => new Date(now_ms) };
  const store = await Store.open(tempDir('aihub-engine-'), { now: clock.now });
  const checks_at: number[] = [];
  const moves: string[] = [];
  const provider: PaymentProvider = {
    name: 'slow-bank',
    timeout_ms: 1_000,
    submit: async () => ({ outcome: 'pending', provider_ref: 'P1', message: 'queued' }),
    status: async () => {
      checks_at.push(now_ms);
      return { outcome: 'pending', provider_ref: 'P1', message: 'still queued' };
    },
  };
  const config = paymentsConfigSchema.parse({
    reconcile: { first_check_ms: 1_000, max_backoff_ms: 4_000, max_checks: 5 },
  });
  const engine = new PaymentEngine({
    store,
    logger: createLogger('silent'),
    clock,
    config,
    providers: { recharge: [provider], dmt: [], pan: [], bills: [] },
    renderers: { recharge: renderRecharge },
    hooks: {
      onTransition: (_tx, txn, from) => {
        assert.ok(txn.stage !== 'final', 'nothing is final');
        moves.push(`${from}→${txn.status}`);
      },
    },
  });
  try {
    const account = await store.transact((tx) => {
      const created = createAccount(tx, { email: 'e@example.com' });
      creditWallet(tx, {
        account_id: created.id,
        amount_micros: 100_000_000,
        from: FUNDING_TOPUP,
        memo: 'fund',
      });
      return created;
    });
    const answer = await engine.submit({
      account,
      service: 'recharge',
      idempotency_key: null,
      client_ref: null,
      request_hash: 'h',
      allow_duplicate: false,
      amount_micros: 10_000_000,
      charges_micros: 0,
      commission_micros: 0,
      pay_to: 'provider:recharge',
      subject: '9876543210',
      details: { operator: 'X', operator_id: 1 },
      provider_params: {},
    });
    const txn_id = (answer.body as { txn_id: string }).txn_id;
    const start_ms = now_ms;
    for (let step = 0; step < 400; step++) {
      now_ms += 100;
      engine.reconcileDue();
      await new Promise((resolve) => setImmediate(resolve));
      await store.transact(() => undefined);
    }
    const gaps = checks_at.map((at, i) => at - (i === 0 ? start_ms : checks_at[i - 1]!));
    assert.deepEqual(
      gaps,
      [1_000, 2_000, 4_000, 4_000, 4_000],
      'doubling from first_check_ms, capped at max_backoff_ms, max_checks in all',
    );
    const txn = store.get('payment_txns', txn_id)!;
    assert.equal(txn.status, 'on_hold');
    assert.equal(txn.stage, 'awaiting_operator');
    assert.equal(txn.checks.stalled, true);
    assert.deepEqual(moves, ['pending→on_hold']);
    assert.equal(heldMicros(store.state, account.id), 10_000_000, 'never a blind refund');
    assert.equal(balanceMicros(store.state, account.id), 90_000_000);
    const rearmed = await engine.recheck(txn_id, { reason: 'asked the bank' });
    assert.equal(rearmed.status, 'pending');
    assert.deepEqual(moves, ['pending→on_hold', 'on_hold→pending']);
    now_ms += 100;
    engine.reconcileDue();
    await new Promise((resolve) => setImmediate(resolve));
    await store.transact(() => undefined);
    assert.equal(checks_at.length, 6, 're-armed by an admin, it is checked again');
  } finally {
    await engine.stop();
    await store.close();
  }
});
