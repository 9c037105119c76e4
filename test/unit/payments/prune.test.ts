// The pruning pass: the expiry rules it shares with the readers (idempotency window, the DMT
// month in IST), and a pass over a real store with the real engine and a fake clock: only
// rows no reader will use are deleted, in bounded commits, and every answer stays the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount } from '../../../gateway/accounts/accounts.ts';
import { FUNDING_TOPUP, balanceMicros, creditWallet } from '../../../gateway/ledger/ledger.ts';
import { createLogger } from '../../../gateway/log.ts';
import { paymentsConfigSchema } from '../../../gateway/payments/config.ts';
import {
  monthKey,
  usageKey,
  usageKeyMonth,
  usageMonthOver,
} from '../../../gateway/payments/dmt/rules.ts';
import { dmtOnTransition } from '../../../gateway/payments/dmt/commands.ts';
import { PaymentEngine, type PaymentIntent } from '../../../gateway/payments/engine/engine.ts';
import {
  idempotencyExpired,
  payIdempotencyId,
} from '../../../gateway/payments/engine/idempotency.ts';
import { Pruner, pruneTarget } from '../../../gateway/payments/engine/prune.ts';
import { renderRecharge } from '../../../gateway/payments/recharge/views.ts';
import type { PaymentTxn } from '../../../gateway/payments/engine/tables.ts';
import type { PaymentProvider, ProviderResult } from '../../../gateway/providers/types.ts';
import { Store } from '../../../gateway/store/store.ts';
import { verifyDataDir } from '../../../gateway/store/verify.ts';
import { tempDir } from '../../support/temp.ts';

test('idempotencyExpired: counted from the first use, 0 keeps a record forever, an unreadable time is kept', () => {
  const created_at = '2025-01-01T00:00:00.000Z';
  const t0 = Date.parse(created_at);
  assert.equal(idempotencyExpired({ created_at }, t0 + 59_999, 60_000), false);
  assert.equal(idempotencyExpired({ created_at }, t0 + 60_000, 60_000), true);
  assert.equal(
    idempotencyExpired({ created_at }, t0 + 10 * 365 * 86_400_000, 0),
    false,
    'window 0: forever',
  );
  assert.equal(idempotencyExpired({ created_at: 'not a time' }, t0, 1), false);
});

test('usageMonthOver: only months before the current one (IST), whatever the mobile; other keys are kept', () => {
  const ist = 330;
  const last_jan_instant = new Date('2025-01-31T18:29:59.999Z'); // 23:59:59.999 IST on 31 January
  const first_feb_instant = new Date('2025-01-31T18:30:00.000Z'); // 00:00 IST on 1 February
  assert.equal(monthKey(last_jan_instant, ist), '2025-01');
  assert.equal(monthKey(first_feb_instant, ist), '2025-02');
  const jan = usageKey('9876500001', '2025-01');
  assert.equal(usageKeyMonth(jan), '2025-01');
  assert.equal(
    usageMonthOver(jan, last_jan_instant, ist),
    false,
    'the current month is what the limit reads',
  );
  assert.equal(usageMonthOver(jan, first_feb_instant, ist), true);
  assert.equal(
    usageMonthOver(usageKey('9876500001', '2024-12'), first_feb_instant, ist),
    true,
    'across a year',
  );
  assert.equal(
    usageMonthOver(usageKey('9876500001', '2025-03'), first_feb_instant, ist),
    false,
    'a later month (clock set back) is kept',
  );
  assert.equal(usageMonthOver(jan, first_feb_instant, 0), false, 'in UTC it is still January');
  for (const odd of ['9876500001', '9876500001:2025-1', '9876500001:2025-01-01', '', ':']) {
    assert.equal(usageKeyMonth(odd), null, odd);
    assert.equal(usageMonthOver(odd, first_feb_instant, ist), false, odd);
  }
});

test('a pass deletes only live rows no reader uses, in bounded commits, and changes no answer; answered keys are history, not its work', async () => {
  let now_ms = Date.parse('2025-01-20T06:30:00Z'); // noon IST, 20 January
  const t0 = now_ms;
  const clock = { now: () => new Date(now_ms) };
  const data_dir = tempDir('aihub-prune-');
  const store = await Store.open(data_dir, { now: clock.now });
  let release_slow!: () => void;
  const slow_gate = new Promise<void>((resolve) => (release_slow = resolve));
  let slow_called!: () => void;
  const slow_started = new Promise<void>((resolve) => (slow_called = resolve));
  let n = 0;
  const provider: PaymentProvider = {
    name: 'bank',
    timeout_ms: 60_000,
    submit: async (request): Promise<ProviderResult> => {
      if (request.subject === '9000000999') {
        slow_called();
        await slow_gate;
      }
      return { outcome: 'success', provider_ref: `P${++n}`, message: 'done' };
    },
    status: async () => ({ outcome: 'pending', provider_ref: null, message: 'unused' }),
  };
  const config = paymentsConfigSchema.parse({
    idempotency_window_ms: 60_000,
    prune: { batch_size: 3 },
  });
  const engine = new PaymentEngine({
    store,
    logger: createLogger('silent'),
    clock,
    config,
    providers: { recharge: [provider], dmt: [], pan: [], bills: [] },
    renderers: { recharge: renderRecharge },
    hooks: { onTransition: () => {} },
  });
  // As index.ts builds it.
  const pruner = new Pruner({
    store,
    logger: createLogger('silent'),
    batch_size: config.prune.batch_size,
    targets: [
      pruneTarget({
        table: 'idempotency',
        expired: (id, record, tx) => engine.idempotencyExpired(id, record, tx.now.getTime()),
      }),
      pruneTarget({
        table: 'dmt_usage',
        expired: (id) => usageMonthOver(id, clock.now(), config.dmt.utc_offset_minutes),
      }),
    ],
  });
  try {
    const account = await store.transact((tx) => {
      const created = createAccount(tx, { email: 'p@example.com' });
      creditWallet(tx, {
        account_id: created.id,
        amount_micros: 1_000_000_000,
        from: FUNDING_TOPUP,
        memo: 'fund',
      });
      // Other rooms' records in the same table: no window, never pruned.
      tx.set('idempotency', 'admin-credit:ref-1', {
        key: 'admin-credit:ref-1',
        request_hash: 'h',
        status: 200,
        body: null,
        created_at: tx.now.toISOString(),
      });
      tx.set('idempotency', `web-topup:${created.id}:n1`, {
        key: `web-topup:${created.id}:n1`,
        request_hash: 'h',
        status: 200,
        body: null,
        created_at: tx.now.toISOString(),
      });
      // A key left in flight by a gateway that stopped before answering (its transaction
      // never reached a provider): live, and past the window prunable.
      for (const orphan of ['o1', 'o2', 'o3', 'o4'])
        tx.set('idempotency', payIdempotencyId(created.id, orphan), {
          key: payIdempotencyId(created.id, orphan),
          request_hash: 'h',
          status: 0,
          body: { txn_id: `txn_${orphan}` },
          created_at: tx.now.toISOString(),
        });
      // Monthly usage: two rows of December (over), January (current), March (later), an unknown key.
      tx.set('dmt_usage', '9876500001:2024-12', 7_000_000_000);
      tx.set('dmt_usage', '9876500002:2024-12', 1_000_000_000);
      tx.set('dmt_usage', '9876500001:2025-01', 9_000_000_000);
      tx.set('dmt_usage', '9876500001:2025-03', 1_000_000);
      tx.set('dmt_usage', 'not-a-usage-key', 1);
      return created;
    });
    const intent = (key: string, subject = '9876543210'): PaymentIntent => ({
      account,
      service: 'recharge',
      idempotency_key: key,
      client_ref: null,
      request_hash: `hash-${subject}`,
      allow_duplicate: false,
      amount_micros: 10_000_000,
      charges_micros: 0,
      commission_micros: 0,
      pay_to: 'provider:recharge',
      subject,
      details: { operator: 'X', operator_id: 1 },
      provider_params: {},
    });
    const txnId = (answer: { body: unknown }) => (answer.body as { txn_id: string }).txn_id;

    for (let i = 1; i <= 7; i++) await engine.submit(intent(`k${i}`));
    const slow = engine.submit(intent('slow', '9000000999')); // still being answered when the pass runs
    await slow_started;
    now_ms = t0 + 50_000;
    const k8 = await engine.submit(intent('k8'));
    now_ms = t0 + 61_000; // k1..k7 and slow are past the 60 s window; k8 is 11 s old

    // Answered keys (k1..k8, the admin's and the dashboard's records) left the live table
    // in the commit that answered them: the pass has only the keys in flight to judge.
    assert.deepEqual(
      Object.keys(store.rows('idempotency')).sort(),
      [
        payIdempotencyId(account.id, 'slow'),
        ...['o1', 'o2', 'o3', 'o4'].map((o) => payIdempotencyId(account.id, o)),
      ].sort(),
    );
    const seq_before = store.state.seq;
    const counts = await pruner.run();
    assert.deepEqual(counts, { idempotency: 4, dmt_usage: 2 });
    assert.equal(
      store.state.seq - seq_before,
      2 + 1,
      'four deletions in commits of at most three, then one for the usage rows',
    );
    assert.deepEqual(
      Object.keys(store.rows('idempotency')),
      [payIdempotencyId(account.id, 'slow')],
      'the key still being answered is kept',
    );
    // History still answers the records of other rooms (no window).
    assert.equal(store.get('idempotency', 'admin-credit:ref-1')?.status, 200);
    assert.equal(store.get('idempotency', `web-topup:${account.id}:n1`)?.status, 200);
    assert.deepEqual(Object.keys(store.rows('dmt_usage')).sort(), [
      '9876500001:2025-01',
      '9876500001:2025-03',
      'not-a-usage-key',
    ]);
    assert.deepEqual(await pruner.run(), {}, 'a second pass finds nothing');

    // Inside its window a key still answers the first answer and moves no money.
    const balance = balanceMicros(store.state, account.id);
    const k8_again = await engine.submit(intent('k8'));
    assert.deepEqual(k8_again, k8);
    assert.equal(balanceMicros(store.state, account.id), balance);
    // Past its window a key is new, pruned or not: the lookup itself decides.
    const k1_again = await engine.submit(intent('k1'));
    assert.equal(store.get('payment_txns', txnId(k1_again))!.idempotency_key, 'k1');
    assert.equal(
      (
        await store.reads.txns(
          { account_id: account.id, match: (t) => t.idempotency_key === 'k1' },
          null,
        )
      ).total,
      2,
    );
    now_ms = t0 + 50_000 + 60_000; // k8 expired now, not pruned yet
    const k8_late = await engine.submit(intent('k8'));
    assert.notEqual(
      txnId(k8_late),
      txnId(k8),
      'an expired record that is still stored answers as if it were gone',
    );

    // The request still being answered keeps its key; once answered, it expires like any other.
    release_slow();
    const slow_answer = await slow;
    const slow_record = store.get('idempotency', payIdempotencyId(account.id, 'slow'))!;
    assert.deepEqual(
      [slow_record.request_hash, slow_record.status, slow_record.body],
      ['hash-9000000999', slow_answer.http_status, slow_answer.body],
      'kept whole while it was answered',
    );
    now_ms = t0 + 200_000;
    assert.deepEqual(await pruner.run(), {}, 'answered: history, nothing live to prune');
    assert.deepEqual(Object.keys(store.rows('idempotency')), []);
    // Past the window, the history's records answer as if they were gone.
    const slow_late = await engine.submit(intent('slow', '9000000999'));
    assert.notEqual(txnId(slow_late), txnId(slow_answer));

    // A transfer of a pruned month failing later gives nothing back and does not bring the row back;
    // one of the current month still gives its amount back.
    const failed = (mobile: string, month: string) =>
      ({
        service: 'dmt',
        status: 'failed',
        amount_micros: 1_000_000_000,
        details: { kind: 'transfer', mobile, month },
      }) as unknown as PaymentTxn;
    await store.transact((tx) => dmtOnTransition(tx, failed('9876500002', '2024-12'), 'pending'));
    await store.transact((tx) => dmtOnTransition(tx, failed('9876500001', '2025-01'), 'pending'));
    assert.equal(store.get('dmt_usage', '9876500002:2024-12'), undefined);
    assert.equal(store.get('dmt_usage', '9876500001:2025-01'), 8_000_000_000);

    // The month turns (IST): January's row goes, March's stays.
    now_ms = Date.parse('2025-01-31T18:30:00Z');
    assert.deepEqual(await pruner.run(), { dmt_usage: 1 });
    assert.deepEqual(Object.keys(store.rows('dmt_usage')).sort(), [
      '9876500001:2025-03',
      'not-a-usage-key',
    ]);
  } finally {
    release_slow();
    await pruner.stop();
    await engine.stop();
    await store.close();
  }
  const report = await verifyDataDir(data_dir);
  assert.deepEqual(report.breaches, []);
  assert.equal(report.ok, true);
});

test('a stopped pruner finishes its commit and starts no other', async () => {
  const data_dir = tempDir('aihub-prune-stop-');
  const store = await Store.open(data_dir);
  try {
    await store.transact((tx) => {
      for (let i = 0; i < 50; i++)
        tx.set('dmt_usage', `98765${String(i).padStart(5, '0')}:2000-01`, 1);
    });
    const pruner = new Pruner({
      store,
      logger: createLogger('silent'),
      batch_size: 10,
      targets: [
        pruneTarget({ table: 'dmt_usage', expired: (id) => usageMonthOver(id, new Date(), 330) }),
      ],
    });
    const pass = pruner.run();
    assert.equal(pruner.run(), pass, 'a running pass is joined');
    // Stopped once its first commit is in (the pass reads its page of ids first).
    while (Object.keys(store.rows('dmt_usage')).length === 50)
      await new Promise((resolve) => setImmediate(resolve));
    await pruner.stop();
    const deleted = (await pass).dmt_usage ?? 0;
    assert.ok(deleted >= 10 && deleted < 50, `stopped between commits (deleted ${deleted})`);
    assert.equal(Object.keys(store.rows('dmt_usage')).length, 50 - deleted);
    assert.deepEqual(await pruner.run(), {});
  } finally {
    await store.close();
  }
  assert.equal((await verifyDataDir(data_dir)).ok, true);
});
