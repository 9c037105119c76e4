// A payment service is a module (issue #38): a fifth service is its own folder and one line in
// the list. Here a fake one (travel insurance: its route, its table and that table's bound, its
// bookkeeping on a status move, its renderer, its document) is written in this file and added
// to the list the gateway is built with; no file of the gateway changes, and the gateway serves
// it over HTTP like the four: switched on by the admin, paid from the wallet through the
// engine, its own answer, its table pruned by the room's pass, its route in /openapi.json.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Router } from 'express';
import { jsonBody } from '../../gateway/http/body.ts';
import { authorize } from '../../gateway/payments/auth.ts';
import { requestHash } from '../../gateway/payments/engine/intent.ts';
import { pruneTarget } from '../../gateway/payments/engine/prune.ts';
import type { ServiceModule } from '../../gateway/payments/service.ts';
import { PAYMENT_SERVICES } from '../../gateway/payments/services.ts';
import type { PaymentProvider, PaymentService } from '../../gateway/providers/types.ts';
import { microsToUnits, unitsToMicros } from '../../gateway/util/money.ts';
import { fakeClockGateway, type FakeClockGateway } from '../support/fake-clock-gateway.ts';
import { createDatabase } from '../support/postgres.ts';
import { TEST_CLUSTER_URL } from './helpers.ts';
import { VALID_KYC, paymentsConfig } from '../support/payments-helpers.ts';

declare module '../../gateway/store/state.ts' {
  interface Tables {
    /** The fake service's own table: a policy per transaction, void once the payment is undone. */
    insure_policies: Record<string, { txn_id: string; void: boolean }>;
  }
}

// The providers' type names the four services whose actions its adapters implement; the fake
// service's provider is this test's own.
const INSURE = 'insure' as PaymentService;
const PREMIUM = 149;

/** The fake service's folder, in a few lines: what ServiceModule asks of a service. */
const insure: ServiceModule = {
  code: INSURE,
  label: 'Travel insurance',
  api: (ctx) =>
    Router().post('/insure/policies', jsonBody(ctx.config), async (req, res) => {
      const { account } = authorize(ctx.store.state, req, res, ctx.logger, INSURE);
      const traveller = String((req.body as { traveller?: unknown }).traveller ?? '');
      const amount_micros = unitsToMicros(PREMIUM);
      const answer = await ctx.engine.submit({
        account,
        service: INSURE,
        idempotency_key: null,
        client_ref: null,
        request_hash: requestHash('insure', { traveller }),
        allow_duplicate: true,
        amount_micros,
        charges_micros: 0,
        commission_micros: 0,
        pay_to: `provider:${INSURE}`,
        subject: traveller,
        details: { kind: 'travel_policy' },
        provider_params: { traveller },
      });
      res.status(answer.http_status).json(answer.body);
    }),
  renderer: () => (txn, balance_micros) => ({
    http_status: 200,
    body: {
      insured: txn.status === 'success',
      policy_no: txn.result.policy_no ?? null,
      txn_id: txn.id,
      balance: microsToUnits(balance_micros),
    },
  }),
  onTransition: (tx, txn) => {
    tx.set('insure_policies', txn.id, { txn_id: txn.id, void: txn.status !== 'success' });
  },
  prune: () => [pruneTarget({ table: 'insure_policies', expired: (_id, policy) => policy.void })],
  route_docs: () => [
    {
      tag: 'insure',
      auth: 'api_key',
      method: 'post',
      path: '/api/insure/policies',
      summary: 'Buy a travel insurance policy',
      success: { status: 200, description: '{insured, policy_no, txn_id, balance}' },
    },
  ],
};

/** The insurer: a traveller whose name ends in "9" is declined, every other one insured. */
const insurer: PaymentProvider = {
  name: 'insurer',
  timeout_ms: 2_000,
  submit: async (request) =>
    request.subject.endsWith('9')
      ? { outcome: 'failed', provider_ref: null, message: 'declined by the insurer' }
      : {
          outcome: 'success',
          provider_ref: `ins-${request.txn_id}`,
          message: 'policy issued',
          data: { policy_no: `POL-${request.subject}` },
        },
  status: async () => ({ outcome: 'not_found', message: 'never seen' }),
};

let gw: FakeClockGateway;

// On the JSON-file store, or on PostgreSQL in a run with AIHUB_TEST_DATABASE_URL set.
before(async () => {
  const database_url = TEST_CLUSTER_URL ? await createDatabase(TEST_CLUSTER_URL) : undefined;
  gw = await fakeClockGateway(paymentsConfig(), { now: () => new Date() }, database_url, {
    services: [...PAYMENT_SERVICES, insure],
    providers: { [INSURE]: [insurer] },
  });
});
after(() => gw.stop());

test('a fifth service registered from the list is served like the four', async () => {
  const registered = await gw.call(
    'POST',
    '/api/register',
    {},
    {
      email: `insure-${process.pid}@example.com`,
      password: 'correct horse battery',
      name: 'Insured',
    },
  );
  assert.equal(registered.status, 201, JSON.stringify(registered.body));
  const { api_key, account_id } = registered.body.data;
  const headers = { 'x-api-key': api_key };
  assert.equal((await gw.call('POST', '/api/kyc', headers, VALID_KYC)).status, 200);
  assert.equal((await gw.api.post(`/admin/kyc/${account_id}/approve`, {})).status, 200);
  const credit = await gw.api.post(`/admin/accounts/${account_id}/credit`, {
    amount: 1_000,
    reference: `fund-${account_id}`,
  });
  assert.equal(credit.status, 200, JSON.stringify(credit.body));

  // Its route is served and checks its own switch, off until the admin turns it on.
  const off = await gw.call('POST', '/api/insure/policies', headers, { traveller: 'ASHA1' });
  assert.equal(off.status, 403, JSON.stringify(off.body));
  assert.equal(off.body.error.code, 'service_inactive');
  const on = await gw.api.post(`/admin/accounts/${account_id}/services`, { [INSURE]: true });
  assert.equal(on.status, 200, JSON.stringify(on.body));
  assert.equal(on.body.services[INSURE], true);
  assert.equal(on.body.services.recharge, false, 'the four keep their switches');

  // Paid through the engine from the wallet, answered by its own renderer.
  const bought = await gw.call('POST', '/api/insure/policies', headers, { traveller: 'ASHA1' });
  assert.equal(bought.status, 200, JSON.stringify(bought.body));
  assert.equal(bought.body.insured, true);
  assert.equal(bought.body.policy_no, 'POL-ASHA1');
  assert.equal(bought.body.balance, 1_000 - PREMIUM);
  const declined = await gw.call('POST', '/api/insure/policies', headers, { traveller: 'RAVI9' });
  assert.equal(declined.status, 200, JSON.stringify(declined.body));
  assert.equal(declined.body.insured, false);
  assert.equal(declined.body.balance, 1_000 - PREMIUM, 'a declined premium is not charged');

  // Its transactions are the engine's: listed with the account's, with their statuses.
  const shown = await gw.call('GET', `/api/transactions/${bought.body.txn_id}`, headers);
  assert.equal(shown.status, 200, JSON.stringify(shown.body));
  assert.equal(shown.body.data.service, INSURE);
  assert.equal(shown.body.data.status, 'success');
  const failed = await gw.call('GET', `/api/transactions/${declined.body.txn_id}`, headers);
  assert.equal(failed.body.data.status, 'failed');

  // Its bookkeeping ran in the commits that moved its transactions; its table's bound is
  // kept by the room's pruning pass: the void policy goes, the issued one stays.
  assert.deepEqual(gw.store.get('insure_policies', declined.body.txn_id), {
    txn_id: declined.body.txn_id,
    void: true,
  });
  const pruned = await gw.prune();
  assert.equal(pruned.insure_policies, 1, JSON.stringify(pruned));
  assert.equal(gw.store.get('insure_policies', declined.body.txn_id), undefined);
  assert.equal(gw.store.get('insure_policies', bought.body.txn_id)?.void, false);

  // Its document is in the gateway's OpenAPI document.
  const docs = await gw.call('GET', '/openapi.json', {});
  assert.equal(docs.status, 200);
  assert.ok(docs.body.paths['/api/insure/policies']?.post, 'its route is documented');
});
