import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadState, Store } from '../../../gateway/store/store.js';
import {
  FUNDING_TOPUP,
  owedMicros,
  availableMicros,
  balanceMicros,
  creditWallet,
  debitWallet,
  heldMicros,
  InsufficientBalanceError,
  openHold,
} from '../../../gateway/ledger/ledger.js';
import { verifyDataDir } from '../../../gateway/store/verify.js';
import { scanHistory } from '../../../gateway/store/history.js';
import { table } from '../../../gateway/store/state.js';
import {
  freeTokensUsed,
  reserve,
  secondsToNextUtcDay,
  settle,
  utcDay,
} from '../../../gateway/chat/billing.js';
import { chatConfigSchema } from '../../../gateway/chat/config.js';
import { tempDir } from '../../support/temp.ts';

const config = chatConfigSchema.parse({});
const standard = config.models['service-ai-standard-6']; // 100 / 400 units per million tokens
const free = config.models['service-ai-free'];

async function funded(amount_micros: number) {
  const data_dir = tempDir('aihub-chat-billing-');
  const store = await Store.open(data_dir);
  if (amount_micros)
    await store.transact((tx) =>
      creditWallet(tx, { account_id: 'acc', amount_micros, from: FUNDING_TOPUP, memo: 'top-up' }),
    );
  return { store, data_dir };
}

const usage = (prompt_tokens: number, completion_tokens: number) => ({
  prompt_tokens,
  completion_tokens,
  status: 'ok' as const,
  target: 'builtin',
  latency_ms: 1.5,
  stream: false,
});

test('the worst case is reserved at once (visible to the next request) and settled to the actual cost in one commit', async () => {
  const { store, data_dir } = await funded(1_000_000);
  const seq_before = store.state.seq;
  const r = reserve(store, {
    account_id: 'acc',
    key_id: 'key',
    tier: standard,
    request_id: 'req_1',
    worst_case_micros: 600_000,
    free_tokens: 0,
  });
  assert.equal(
    availableMicros(store.state, 'acc'),
    400_000,
    'the worst case is set aside before the upstream call',
  );
  assert.equal(store.state.seq, seq_before, 'reserving writes nothing');
  assert.throws(
    () =>
      reserve(store, {
        account_id: 'acc',
        key_id: 'key',
        tier: standard,
        request_id: 'req_2',
        worst_case_micros: 400_001,
        free_tokens: 0,
      }),
    InsufficientBalanceError,
  );
  const s = await settle(store, r, usage(1_000, 500), Date.now());
  // 1000 * 100 + 500 * 400 = 300,000 units per million tokens → 0.3 units
  assert.equal(s.cost_micros, 300_000);
  assert.equal(s.balance_micros, 700_000);
  assert.equal(s.receivable_micros, 0);
  assert.equal(store.state.seq, seq_before + 1, 'one durable commit per request');
  assert.equal(
    availableMicros(store.state, 'acc'),
    700_000,
    'the rest of the reservation is released',
  );
  assert.equal(heldMicros(store.state, 'acc'), 0);
  assert.equal(store.state.balances['revenue:ai'], 300_000);
  const { by_protocol, ...totals } = table(store.state, 'usage').acc!;
  assert.deepEqual(totals, {
    requests: 1,
    prompt_tokens: 1_000,
    completion_tokens: 500,
    cost_micros: 300_000,
  });
  assert.deepEqual(
    { ...by_protocol },
    {
      chat: {
        requests: 1,
        prompt_tokens: 1_000,
        completion_tokens: 500,
        cached_tokens: 0,
        reasoning_tokens: 0,
        cost_micros: 300_000,
      },
    },
  );
  await store.close();
  const report = await verifyDataDir(data_dir);
  assert.equal(report.ok, true, JSON.stringify(report));
  const records = [];
  for await (const item of scanHistory(data_dir)) if ('record' in item) records.push(item.record);
  assert.equal(records.length, 1);
  assert.equal(records[0]!.type, 'usage');
  assert.equal(records[0]!.key_id, 'key');
  assert.equal(records[0]!.tier, 'standard');
  assert.equal(records[0]!.cost_micros, 300_000);
  assert.equal(records[0]!.target, 'builtin');
  assert.equal(records[0]!.request_id, 'req_1');
});

test('an upstream that counts more than the hold is billed in full: the wallet pays what it has, the rest is owed and paid from the next credit', async () => {
  const { store, data_dir } = await funded(500);
  const r = reserve(store, {
    account_id: 'acc',
    key_id: 'key',
    tier: standard,
    request_id: 'req_1',
    worst_case_micros: 400,
    free_tokens: 0,
  });
  const s = await settle(store, r, usage(10, 0), Date.now()); // 10 * 100 = 1,000 micro-units
  assert.equal(s.cost_micros, 1_000, 'the cost is tokens × price, whatever was held');
  assert.equal(
    s.receivable_micros,
    500,
    'the 400 held and the 100 left in the wallet are paid; 500 is owed',
  );
  assert.equal(balanceMicros(store.state, 'acc'), 0, 'never below zero');
  assert.equal(owedMicros(store.state, 'acc'), 500);
  assert.equal(store.state.balances['revenue:ai'], 1_000);
  await store.transact((tx) =>
    creditWallet(tx, {
      account_id: 'acc',
      amount_micros: 2_000,
      from: FUNDING_TOPUP,
      memo: 'top-up',
    }),
  );
  assert.equal(owedMicros(store.state, 'acc'), 0, 'the next credit pays the debt first');
  assert.equal(balanceMicros(store.state, 'acc'), 1_500);
  await store.close();
  assert.equal((await verifyDataDir(data_dir)).ok, true);
  const records = [];
  for await (const item of scanHistory(data_dir))
    if ('record' in item && item.record.type === 'usage') records.push(item.record);
  assert.equal(records[0]!.cost_micros, 1_000);
  assert.equal(records[0]!.receivable_micros, 500);
});

test('a zero-cost settlement releases the reservation in full and posts nothing', async () => {
  const { store } = await funded(1_000);
  const r = reserve(store, {
    account_id: 'acc',
    key_id: 'key',
    tier: standard,
    request_id: 'req_1',
    worst_case_micros: 800,
    free_tokens: 0,
  });
  const s = await settle(
    store,
    r,
    { ...usage(0, 0), status: 'upstream_error', target: null },
    Date.now(),
  );
  assert.equal(s.cost_micros, 0);
  assert.equal(balanceMicros(store.state, 'acc'), 1_000);
  assert.equal(availableMicros(store.state, 'acc'), 1_000);
  assert.equal(store.state.balances['revenue:ai'] ?? 0, 0);
  assert.equal(table(store.state, 'usage').acc?.requests, 1);
  await store.close();
});

test('free tier: nothing reserved, tokens counted per UTC day, an empty wallet is fine', async () => {
  const { store } = await funded(0);
  const now = Date.UTC(2026, 0, 15, 23, 59, 30);
  const r = reserve(store, {
    account_id: 'acc',
    key_id: 'key',
    tier: free,
    request_id: 'req_1',
    worst_case_micros: 0,
    free_tokens: 1_500,
  });
  assert.equal(r.money.amount_micros, 0);
  const s = await settle(store, r, usage(700, 300), now);
  assert.equal(s.cost_micros, 0);
  assert.equal(freeTokensUsed(store.state, 'acc', utcDay(now)), 1_000);
  const r2 = reserve(store, {
    account_id: 'acc',
    key_id: 'key',
    tier: free,
    request_id: 'req_2',
    worst_case_micros: 0,
    free_tokens: 10,
  });
  await settle(store, r2, usage(5, 5), now);
  assert.equal(freeTokensUsed(store.state, 'acc', '2026-01-15'), 1_010);
  assert.equal(freeTokensUsed(store.state, 'acc', '2026-01-16'), 0, 'a new day starts from zero');
  assert.equal(secondsToNextUtcDay(now), 30);
  await store.close();
});

test('other spenders respect chat reservations; a reservation dies with the process', async () => {
  const { store, data_dir } = await funded(1_000);
  reserve(store, {
    account_id: 'acc',
    key_id: 'key',
    tier: standard,
    request_id: 'req_1',
    worst_case_micros: 700,
    free_tokens: 0,
  });
  await assert.rejects(
    store.transact((tx) =>
      openHold(tx, { account_id: 'acc', amount_micros: 301, purpose: 'recharge' }),
    ),
    InsufficientBalanceError,
  );
  await assert.rejects(
    store.transact((tx) =>
      debitWallet(tx, { account_id: 'acc', amount_micros: 301, to: 'revenue:x', memo: 'x' }),
    ),
    InsufficientBalanceError,
  );
  await store.transact((tx) =>
    openHold(tx, { account_id: 'acc', amount_micros: 300, purpose: 'recharge' }),
  );
  await store.close();
  const reopened = await Store.open(data_dir);
  assert.equal(
    balanceMicros(reopened.state, 'acc'),
    700,
    'the in-flight chat request, never settled, is not billed',
  );
  assert.equal(availableMicros(reopened.state, 'acc'), 700);
  assert.equal(heldMicros(reopened.state, 'acc'), 300);
  await reopened.close();
  assert.equal((await verifyDataDir(data_dir)).ok, true);
});

test('issue #13 finding 9: a settlement durable before a crash is billed, though the answer was never sent', async () => {
  const { store, data_dir } = await funded(1_000_000);
  const r = reserve(store, {
    account_id: 'acc',
    key_id: 'key',
    tier: standard,
    request_id: 'req_cut',
    worst_case_micros: 600_000,
    free_tokens: 0,
  });
  // The chat route writes its answer only after this promise resolves; a crash right after it
  // leaves the client without an answer. What is on disk at that moment is what a restart sees.
  await settle(store, r, usage(1_000, 500), Date.now());
  const on_disk = await loadState(data_dir, { repair: false, now: () => new Date() });
  assert.equal(balanceMicros(on_disk.state, 'acc'), 700_000, 'billed: durable before the answer');
  const request_ids: unknown[] = [];
  for await (const item of scanHistory(data_dir))
    if ('record' in item && item.record.type === 'usage') request_ids.push(item.record.request_id);
  assert.deepEqual(
    request_ids,
    ['req_cut'],
    'the usage record names the request the client never saw answered',
  );
  await store.close();
});
