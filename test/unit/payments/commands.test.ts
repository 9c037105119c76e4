// The payments rules moved out of the routes, called without HTTP: recharge and PAN checks
// (what reaches the engine), the admin's eKYC review, service activation, IP whitelist and
// re-check, and onboarding's sign-up limit and eKYC resubmission rule, on a real store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount } from '../../../gateway/accounts/accounts.ts';
import { ApiError } from '../../../gateway/http/errors.ts';
import {
  reviewKyc,
  recheckTransaction,
  setIpWhitelist,
  setServices,
  whitelistEntries,
} from '../../../gateway/payments/admin/commands.ts';
import type { Audit } from '../../../gateway/payments/logs.ts';
import { paymentsConfigSchema } from '../../../gateway/payments/config.ts';
import type { PaymentEngine, PaymentIntent } from '../../../gateway/payments/engine/engine.ts';
import { kycBody } from '../../../gateway/payments/onboarding/kyc.ts';
import { onboardingCommands } from '../../../gateway/payments/onboarding/commands.ts';
import { PAYMENT_SERVICES } from '../../../gateway/payments/services.ts';
import { Pricing } from '../../../gateway/payments/network/pricing.ts';
import { findPan } from '../../../gateway/payments/pan/commands.ts';
import { rechargeCommands } from '../../../gateway/payments/recharge/commands.ts';
import type { RechargeLookups } from '../../../gateway/payments/recharge/lookup.ts';
import { rechargeBody } from '../../../gateway/payments/recharge/schemas.ts';
import type { Account } from '../../../gateway/store/state.ts';
import { FileStore as Store } from '../../../gateway/store/store.ts';
import { systemClock } from '../../../gateway/kernel/clock.ts';
import { Sealer, newKey } from '../../../gateway/util/sealed.ts';
import { tempDir } from '../../support/temp.ts';

const settings = paymentsConfigSchema.parse({ register: { per_ip_per_hour: 2 } });
const account = { id: 'acct_1' } as Account;
/** Pricing over an empty store: the default scheme, no distributor, no eKYC on record. */
const pricing = { pricing: new Pricing(settings), store: { get: () => undefined } as never };

/** An engine that records the intents it is given: the commands' output is what is asserted. */
function recordingEngine(): { engine: PaymentEngine; intents: PaymentIntent[] } {
  const intents: PaymentIntent[] = [];
  const engine = {
    submit: async (intent: PaymentIntent) => (intents.push(intent), { http_status: 200, body: {} }),
  } as unknown as PaymentEngine;
  return { engine, intents };
}

/** Lookups a recharge with its operator_id and no plan check never makes. */
const noLookups = new Proxy({} as RechargeLookups, {
  get: (_target, name) => () => assert.fail(`a lookup (${String(name)}) was made`),
});

function refused(code: string, status: number, field?: string) {
  return (error: unknown) => {
    assert.ok(error instanceof ApiError, `an ApiError, not ${String(error)}`);
    assert.equal(error.code, code);
    assert.equal(error.status, status);
    if (field !== undefined) assert.equal(error.param, field);
    return true;
  };
}

test('recharge: operator, number and amount are checked before the engine; the commission is the operator rate', async () => {
  const { engine, intents } = recordingEngine();
  const providers = { recharge: [], bills: [], dmt: [], pan: [] };
  const commands = rechargeCommands({ settings, engine, providers, ...pricing }, noLookups, {
    pay: () => assert.fail('no bill payment'),
  });
  const body = (fields: Record<string, unknown>) =>
    rechargeBody.parse({ operator_id: 1, number: '98765 43210', amount: 100, ...fields });
  assert.throws(
    () => commands.recharge(account, body({ operator_id: 999 }), null),
    refused('unknown_operator', 400, 'operator_id'),
  );
  assert.throws(
    () => commands.recharge(account, body({ number: '12345' }), null),
    refused('invalid_number', 400, 'number'),
  );
  assert.throws(
    () => commands.recharge(account, body({ amount: 5 }), null),
    refused('amount_out_of_range', 400, 'amount'),
  );
  assert.equal(intents.length, 0, 'nothing refused reached the engine');

  await commands.recharge(account, body({ client_ref: 'r-1' }), 'key-1');
  const [intent] = intents;
  assert.equal(intent!.service, 'recharge');
  assert.equal(intent!.subject, '9876543210', 'the mobile number is normalized');
  assert.equal(intent!.amount_micros, 100_000_000);
  assert.equal(intent!.commission_micros, 2_500_000, "Airtel's 2.5 %");
  assert.equal(intent!.idempotency_key, 'key-1');
  assert.equal(intent!.client_ref, 'r-1');
  assert.equal(intent!.allow_duplicate, false);
});

test('PAN: a malformed PAN is a 400; a lookup holds the fee, names the holder type and may repeat', async () => {
  const { engine, intents } = recordingEngine();
  assert.throws(
    () => findPan({ settings, engine, ...pricing }, account, { pan_number: 'ABCDE1234' }, null),
    refused('invalid_pan', 400, 'pan_number'),
  );
  await findPan({ settings, engine, ...pricing }, account, { pan_number: 'abcpe1234f' }, null);
  assert.equal(intents.length, 1);
  assert.equal(intents[0]!.amount_micros, settings.pan.fee);
  assert.equal(intents[0]!.pay_to, 'revenue:pan');
  assert.equal(intents[0]!.subject, 'ABCPE1234F');
  assert.equal(intents[0]!.details.pan_type, 'Individual');
  assert.equal(intents[0]!.allow_duplicate, true);
});

test('admin: eKYC is decided once, services wait for approval, whitelist entries are checked and deduplicated', async () => {
  const data_dir = tempDir('aihub-commands-');
  const store = await Store.open(data_dir);
  const audited: string[] = [];
  const audit: Audit = (_tx, entry) => audited.push(entry.action);
  try {
    const created = await store.transact((tx) => createAccount(tx, { email: 'kyc@example.com' }));
    await assert.rejects(
      reviewKyc(store, created.id, 'approved', null, audit),
      refused('kyc_not_found', 404),
    );
    await assert.rejects(
      setServices(store, created.id, { recharge: true }, audit),
      refused('kyc_not_approved', 409, 'recharge'),
    );

    const commands = onboardingCommands({
      store,
      config: { data_dir } as never,
      settings,
      clock: systemClock,
      sealer: new Sealer([newKey()]),
      services: PAYMENT_SERVICES,
    });
    const body = kycBody.parse({
      name: 'Asha Rao',
      aadhaar_number: '2345 6789 0124',
      pan_number: 'ABCPE1234F',
    });
    await commands.submitKyc(created.id, body, []);
    await assert.rejects(
      commands.submitKyc(created.id, body, []),
      refused('kyc_under_review', 409),
    );

    const decided = await reviewKyc(store, created.id, 'approved', null, audit);
    assert.equal(decided.status, 'approved');
    assert.equal(store.get('accounts', created.id)!.kyc_status, 'approved');
    await assert.rejects(
      reviewKyc(store, created.id, 'rejected', 'late', audit),
      refused('kyc_not_under_review', 409),
    );
    await assert.rejects(commands.submitKyc(created.id, body, []), refused('kyc_approved', 409));

    await setServices(store, created.id, { recharge: true }, audit);
    assert.equal(store.get('accounts', created.id)!.services.recharge, true);

    assert.throws(
      () => whitelistEntries(['10.0.0.1', 'not an address']),
      refused('invalid_value', 400, 'ips.1'),
    );
    await setIpWhitelist(store, created.id, ['10.0.0.1', '10.0.0.1', '192.168.0.0/16'], audit);
    assert.deepEqual(store.get('accounts', created.id)!.ip_whitelist, [
      '10.0.0.1',
      '192.168.0.0/16',
    ]);

    assert.deepEqual(
      audited,
      ['kyc.approve', 'account.services', 'account.ip_whitelist'],
      'one audit record per change, none for a refusal',
    );
    assert.throws(
      () => recheckTransaction(store, {} as PaymentEngine, 'txn_missing'),
      refused('transaction_not_found', 404),
    );
  } finally {
    await store.close();
  }
});

test('onboarding: sign-ups per address are limited with a Retry-After; other addresses are not', () => {
  const commands = onboardingCommands({
    // One gateway: the limit is not shared out (liveGateways is all the limiter asks of the store).
    store: { liveGateways: () => 1 } as unknown as Store,
    config: {} as never,
    settings,
    clock: systemClock,
    sealer: new Sealer([newKey()]),
    services: PAYMENT_SERVICES,
  });
  commands.admitSignup('203.0.113.7');
  commands.admitSignup('203.0.113.7');
  assert.throws(
    () => commands.admitSignup('203.0.113.7'),
    (error: unknown) =>
      error instanceof ApiError && error.status === 429 && Number(error.headers['retry-after']) > 0,
  );
  commands.admitSignup('203.0.113.8');
});
