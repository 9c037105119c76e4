// Issue #27 through the HTTP provider (providers/http/adapter.ts) against a scripted aggregator on
// loopback, for what the sandbox cannot show of a real aggregator: a number's operator from
// its HLR endpoint, an operator's plans and a DTH subscriber from theirs, and a recharge
// without operator_id; a submission that times out (pending) and settles by the status
// check; a reversal arriving by a signed callback days after a success (the amount back, the
// commission taken back, a webhook); a DMT transfer the bank fails after accepting it
// (refund_pending) and its refund OTP wrong three times; a BBPS payment carrying its BBPS
// reference and a complaint registered and followed at the aggregator. After each step the
// books verify and the wallet is right to the paisa.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { request, type Gateway } from './helpers.ts';
import { json, startUpstream, type Seen, type Upstream } from '../support/payments-upstream.ts';
import {
  aadhaar,
  addBeneficiary,
  balance,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  txnOf,
  verifyOk,
  waitFor,
  waitStatus,
} from '../support/payments-helpers.ts';

const SECRET = 'callback-secret-5b1f';
/**
 * Every call of the aggregator shares this timeout; only the one submission that never
 * answers waits it out. Not shorter: a loaded machine (the PostgreSQL pass) must not turn an
 * answered call into a timeout.
 */
const TIMEOUT_MS = 3_000;

const WEBHOOKS = (paymentsConfig().payments as { webhooks: Record<string, unknown> }).webhooks;

/** The OTP in the latest SMS the aggregator's SMS endpoint took for `mobile`. */
function lastOtp(aggregator: Upstream, mobile: string): string {
  const sms = aggregator.seen.filter((s) => s.url === '/sms' && s.json?.to === mobile).at(-1);
  const otp = /\b(\d{6})\b/.exec(String(sms?.json?.text))?.[1];
  assert.ok(otp, `an OTP was sent to ${mobile}: ${JSON.stringify(sms?.json)}`);
  return otp;
}

/** A remitter registered and verified with the OTP sent by SMS (live mode: no sandbox_otp). */
async function liveRemitter(
  gw: Gateway,
  aggregator: Upstream,
  headers: Record<string, string>,
  mobile: string,
): Promise<void> {
  const registered = await request(`${gw.url}/api/dmt/remitter`, {
    headers,
    body: { mobile, name: 'Ravi Kumar' },
  });
  assert.equal(registered.status, 200, JSON.stringify(registered.body));
  assert.equal(registered.body.data.sandbox_otp, undefined, 'live: the OTP only by SMS');
  const verified = await request(`${gw.url}/api/dmt/remitter/verify`, {
    headers,
    body: { mobile, otp: lastOtp(aggregator, mobile) },
  });
  assert.equal(verified.status, 200, JSON.stringify(verified.body));
  // RBI's 2024 framework: the remitter's document, verified once through the aggregator.
  const kyc = await request(`${gw.url}/api/dmt/remitter/kyc`, {
    headers,
    body: { mobile, document_type: 'aadhaar', document_number: aadhaar(), name: 'Ravi Kumar' },
  });
  assert.equal(kyc.status, 200, JSON.stringify(kyc.body));
  assert.equal(kyc.body.data.kyc.verified, true);
  assert.equal(aggregator.seen.find((seen) => seen.url === '/dmt/kyc')!.json.type, 'aadhaar');
}

const round = (units: number) => Math.round(units * 100) / 100;

/** The aggregator's own record of each transaction it was sent: its status by our txn id. */
type States = Map<string, string>;

function aggregatorScript(states: States) {
  return (req: Seen, res: Parameters<typeof json>[0]) => {
    const body = req.json ?? {};
    const [path] = req.url.split('?');
    switch (path) {
      case '/sms':
        return json(res, 200, { accepted: true });
      case '/hlr':
        return json(res, 200, {
          result: 'FOUND',
          data: { opr: 'AT', circle: 'Karnataka', type: 'PREPAID', ported: 'N' },
        });
      case '/plans':
        return json(res, 200, {
          result: 'FOUND',
          plans: [
            {
              id: 'AT-299',
              price: '299.00',
              validity: '28 days',
              benefit: 'Unlimited calls, 1 GB/day',
              type: 'UNLIMITED',
            },
            { id: 'AT-19', price: 19, validity: '1 day', benefit: '1 GB data', type: 'DATA' },
            { id: 'AT-BAD', price: 'n/a', benefit: 'no price: left out' },
          ],
        });
      case '/dth-info':
        return body.vc === '01234567890'
          ? json(res, 200, {
              result: 'FOUND',
              customer: {
                name: 'Kavita Nair',
                balance: '152.40',
                monthly: 349,
                next: '2026-12-03',
              },
            })
          : json(res, 200, { result: 'NOT_FOUND' });
      case '/recharge/pay':
        // 0004: taken but never answered; still processing when first asked, done after.
        if (String(body.number).endsWith('0004')) return void states.set(body.ref, 'PROCESSING');
        states.set(body.ref, 'SUCCESS');
        return json(res, 200, { status: 'SUCCESS', message: 'recharged', ref: `OPR${body.ref}` });
      case '/dmt/kyc':
        // The remitter's officially valid document, checked at the aggregator (RBI 2024).
        return json(res, 200, {
          result: 'FOUND',
          document: { name: String(body.name).toUpperCase() },
        });
      case '/dmt/pay':
        // Accepted by the bank, then failed there: the status check says FAILED.
        states.set(body.ref, 'FAILED');
        return json(res, 200, { status: 'PENDING', message: 'accepted by the bank' });
      case '/bbps/fetch':
        return json(res, 200, {
          result: 'FOUND',
          bill: { name: 'Anil Sharma', amount: 845.5, due: '2026-12-05', number: 'B-7741' },
        });
      case '/bbps/pay':
        states.set(body.ref, 'SUCCESS');
        return json(res, 200, {
          status: 'SUCCESS',
          ref: `BLR${body.ref.slice(-8)}`,
          bbps: `CC0126330${body.ref.slice(-8)}`,
        });
      case '/bbps/complaint':
        return json(res, 200, {
          result: 'OK',
          complaint: { ref: 'CC0126330000042', status: 'ASSIGNED', to: 'BESCOM' },
        });
      case '/bbps/complaint-status':
        return json(res, 200, {
          result: 'OK',
          complaint: {
            status: 'RESOLVED',
            to: 'BESCOM',
            resolution: 'Payment posted to the consumer account on 2026-11-27',
          },
        });
      default: {
        const status = /^\/(recharge|dmt|bbps)\/status\/(txn_[0-9a-f]+)$/.exec(path ?? '');
        if (status) {
          const state = states.get(status[2]!);
          if (state === 'PROCESSING') {
            states.set(status[2]!, 'SUCCESS');
            return json(res, 200, { status: 'PENDING' });
          }
          return state
            ? json(res, 200, { status: state, ref: `REF${status[2]!.slice(-8)}` })
            : json(res, 200, { status: 'NOT_FOUND' });
        }
        return json(res, 404, { status: 'NO_SUCH_ENDPOINT' });
      }
    }
  };
}

/** One HTTP provider per service, all at the scripted aggregator. */
function providers(url: string) {
  const common = (service: string) => ({
    type: 'http',
    name: `agg-${service}`,
    timeout_ms: TIMEOUT_MS,
    status: { url: `${url}/${service}/status/{txn_id}`, method: 'GET' },
    response: {
      status_field: 'status',
      ref_field: 'ref',
      message_field: 'message',
      data_fields: service === 'bbps' ? { biller_ref: 'ref', bbps_ref: 'bbps' } : {},
    },
    status_map: {
      success: ['SUCCESS'],
      pending: ['PENDING'],
      failed: ['FAILED'],
      not_found: ['NOT_FOUND'],
      reversed: ['REVERSED'],
    },
    callback: {
      auth: { type: 'hmac_sha256', header: 'X-Signature', secret_env: 'AGG_CALLBACK_SECRET' },
      txn_field: 'txn',
      status_field: 'status',
      message_field: 'message',
    },
  });
  const found = (fields: Record<string, string>, data_fields: Record<string, string>) => ({
    method: 'POST',
    fields,
    status_field: 'result',
    found: ['FOUND', 'OK'],
    not_found: ['NOT_FOUND'],
    data_fields,
  });
  return {
    recharge: [
      {
        ...common('recharge'),
        submit: {
          url: `${url}/recharge/pay`,
          fields: {
            ref: 'txn_id',
            number: 'subject',
            amount_paise: 'amount_paise',
            operator: 'param:operator_id',
          },
        },
        codes: { operator_id: { '1': 'AT', '23': 'DISH' } },
        lookups: {
          plans: {
            url: `${url}/plans`,
            ...found({ operator: 'param:operator_id', circle: 'param:circle' }, {}),
            list_field: 'plans',
            item_fields: {
              plan_id: 'id',
              amount: 'price',
              validity: 'validity',
              description: 'benefit',
              category: 'type',
            },
          },
          dth_info: {
            url: `${url}/dth-info`,
            ...found(
              { operator: 'param:operator_id', vc: 'subject' },
              {
                customer_name: 'customer.name',
                balance: 'customer.balance',
                monthly_recharge: 'customer.monthly',
                next_recharge_date: 'customer.next',
              },
            ),
          },
          hlr: {
            url: `${url}/hlr`,
            ...found(
              { msisdn: 'subject' },
              { operator_id: 'data.opr', circle: 'data.circle', type: 'data.type' },
            ),
          },
        },
      },
    ],
    dmt: [
      {
        ...common('dmt'),
        submit: {
          url: `${url}/dmt/pay`,
          fields: { ref: 'txn_id', account: 'subject', ifsc: 'param:ifsc', amount: 'amount' },
        },
        lookups: {
          remitter_kyc: {
            url: `${url}/dmt/kyc`,
            ...found(
              { document: 'subject', type: 'param:document_type', name: 'param:name' },
              { name_on_document: 'document.name' },
            ),
          },
        },
      },
    ],
    bills: [
      {
        ...common('bbps'),
        submit: {
          url: `${url}/bbps/pay`,
          fields: {
            ref: 'txn_id',
            consumer: 'subject',
            amount_paise: 'amount_paise',
            biller: 'param:biller_id',
            mobile: 'param:customer_mobile',
          },
        },
        lookup: {
          url: `${url}/bbps/fetch`,
          ...found(
            { biller: 'param:biller_id', consumer: 'subject' },
            {
              customer_name: 'bill.name',
              amount: 'bill.amount',
              due_date: 'bill.due',
              bill_number: 'bill.number',
            },
          ),
        },
        lookups: {
          complaint: {
            url: `${url}/bbps/complaint`,
            ...found(
              {
                id: 'param:complaint_id',
                txn: 'param:txn_id',
                type: 'param:type',
                reason: 'param:reason',
              },
              {
                complaint_ref: 'complaint.ref',
                status: 'complaint.status',
                assigned_to: 'complaint.to',
              },
            ),
          },
          complaint_status: {
            url: `${url}/bbps/complaint-status`,
            ...found(
              { ref: 'param:complaint_ref' },
              {
                status: 'complaint.status',
                assigned_to: 'complaint.to',
                resolution: 'complaint.resolution',
              },
            ),
          },
        },
      },
    ],
  };
}

/** The webhook events received for one transaction, in order. */
function eventsOf(receiver: Upstream, id: string): string[] {
  return receiver.seen.filter((s) => s.json?.data?.txn_id === id).map((s) => s.json.event);
}

/** A provider's status callback, signed as the aggregator signs it (or not). */
function callback(gw: Gateway, service: string, body: unknown, secret = SECRET) {
  const raw = JSON.stringify(body);
  return request(
    `${gw.url}/api/callbacks/${service}/agg-${service === 'bills' ? 'bbps' : service}`,
    {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-signature': createHmac('sha256', secret).update(raw).digest('hex'),
      },
      raw,
    },
  );
}

test(
  'HTTP provider on loopback: HLR lookup, plans, DTH info, a timed-out submission settled by the status check, a reversal by signed callback, a DMT refund OTP wrong three times, a BBPS payment and complaint',
  { timeout: 120_000 },
  async () => {
    const states: States = new Map();
    const aggregator = await startUpstream(aggregatorScript(states));
    const receiver = await startUpstream((_req, res) => json(res, 200, { ok: true }));
    const gw = await startPaymentsGateway(
      paymentsConfig({
        providers: providers(aggregator.url),
        dmt: {
          otp: {
            resend_interval_ms: 0,
            sms: {
              type: 'http',
              url: `${aggregator.url}/sms`,
              fields: { to: 'mobile', text: 'message' },
            },
          },
        },
        bills: { complaints: { refresh_ms: 0 } },
        // Live mode (real providers configured); the webhook receiver is on loopback.
        webhooks: { ...WEBHOOKS, allow_private_addresses: true },
      }),
      { env: { AGG_CALLBACK_SECRET: SECRET } },
    );
    try {
      const { headers } = await onboard(gw, 5_000, { recharge: true, dmt: true, bills: true });
      const hook = await request(`${gw.url}/api/webhook`, {
        method: 'PUT',
        headers,
        body: { url: `${receiver.url}/hook` },
      });
      assert.equal(hook.status, 200, JSON.stringify(hook.body));
      const start = await balance(gw, headers);

      // The number's operator from the aggregator's HLR (AT → operator 1), and a recharge
      // without operator_id that uses it.
      const looked = await request(`${gw.url}/api/recharge/lookup?number=9876500001`, { headers });
      assert.equal(looked.status, 200, JSON.stringify(looked.body));
      assert.equal(looked.body.data.operator_id, 1);
      assert.equal(looked.body.data.circle, 'KA');
      assert.equal(looked.body.data.provider, 'agg-recharge');
      const hlr = aggregator.seen.find((s) => s.url === '/hlr')!;
      assert.deepEqual(hlr.json, { msisdn: '9876500001' });
      // Its plans in that circle, read from the aggregator's list (an item without a price is left out).
      const plans = await request(`${gw.url}/api/recharge/plans?operator_id=1&circle=KA`, {
        headers,
      });
      assert.equal(plans.status, 200, JSON.stringify(plans.body));
      assert.deepEqual(
        plans.body.data.plans.map((p: any) => [p.plan_id, p.amount, p.category]),
        [
          ['AT-299', 299, 'unlimited'],
          ['AT-19', 19, 'data'],
        ],
      );
      assert.deepEqual(aggregator.seen.find((s) => s.url === '/plans')!.json, {
        operator: 'AT',
        circle: 'KA',
      });
      // A DTH subscriber (Dish TV, DISH at the aggregator); an unknown one is 404.
      const dth = await request(`${gw.url}/api/dth/info?operator_id=23&number=01234567890`, {
        headers,
      });
      assert.equal(dth.status, 200, JSON.stringify(dth.body));
      assert.equal(dth.body.data.customer_name, 'Kavita Nair');
      assert.equal(dth.body.data.balance, 152.4);
      assert.equal(dth.body.data.monthly_recharge, 349);
      assert.equal(dth.body.data.next_recharge_date, '2026-12-03');
      const no_dth = await request(`${gw.url}/api/dth/info?operator_id=23&number=01234567899`, {
        headers,
      });
      assert.equal(no_dth.status, 404);
      assert.equal(no_dth.body.error.code, 'subscriber_not_found');
      const recharged = await request(`${gw.url}/api/recharge`, {
        headers,
        body: { number: '9876500001', amount: 100 },
      });
      assert.equal(recharged.status, 200, JSON.stringify(recharged.body));
      assert.equal(recharged.body.data.status, 'success');
      assert.equal(recharged.body.data.operator_id, 1);
      const sent = aggregator.seen.find((s) => s.url === '/recharge/pay')!;
      assert.equal(sent.json.operator, 'AT', "our operator sent as the aggregator's code");
      assert.equal(sent.json.amount_paise, 10_000);
      const credited = recharged.body.data.commission_credited;
      assert.equal(await balance(gw, headers), round(start - 100 + credited));
      await verifyOk(gw);

      // A reversal by callback after the success: an unsigned one is refused and changes
      // nothing; the signed one brings the amount back less the commission.
      const id = recharged.body.txn_id;
      const forged = await callback(gw, 'recharge', { txn: id, status: 'REVERSED' }, 'not-it');
      assert.equal(forged.status, 401);
      assert.equal(forged.body.error.code, 'callback_unauthenticated');
      assert.equal((await txnOf(gw, headers, id)).status, 'success');
      const reversal = await callback(gw, 'recharge', {
        txn: id,
        status: 'REVERSED',
        message: 'reversed by the operator',
      });
      assert.equal(reversal.status, 200, JSON.stringify(reversal.body));
      assert.equal(reversal.body.applied, true);
      assert.equal(reversal.body.data.status, 'reversed');
      const reversed = await txnOf(gw, headers, id);
      assert.equal(reversed.reversal.by, 'provider');
      assert.equal(reversed.reversal.commission_taken_back, 2.5);
      assert.equal(await balance(gw, headers), start, 'to the paisa');
      const again = await callback(gw, 'recharge', { txn: id, status: 'REVERSED' });
      assert.equal(again.body.applied, false, 'a repeated callback changes nothing');
      await waitFor(
        () => eventsOf(receiver, id).length === 2,
        () => JSON.stringify(eventsOf(receiver, id)),
      );
      assert.deepEqual(eventsOf(receiver, id), ['transaction.success', 'transaction.reversed']);
      await verifyOk(gw);

      // A submission the aggregator takes but never answers: pending after the timeout (the
      // money held, not refunded: it may have gone through), then success by the status check.
      const hung = await request(`${gw.url}/api/recharge`, {
        headers,
        body: { operator_id: 1, number: '9876500004', amount: 50 },
      });
      assert.equal(hung.status, 200, JSON.stringify(hung.body));
      assert.equal(hung.body.data.status, 'pending');
      assert.equal(await balance(gw, headers), round(start - 50), 'held while pending');
      const settled = await waitStatus(gw, headers, hung.body.txn_id, 'success');
      assert.ok(
        aggregator.seen.some((s) => s.url === `/recharge/status/${hung.body.txn_id}`),
        'settled by asking the aggregator',
      );
      assert.equal(await balance(gw, headers), round(start - 50 + settled.commission_breakup.net));
      await verifyOk(gw);
      const after_recharges = await balance(gw, headers);

      // DMT: the bank accepts the transfer, then fails it: refund_pending, the amount held.
      // Three wrong OTPs void the OTP; a new one refunds amount and charges.
      await liveRemitter(gw, aggregator, headers, '9876512345');
      const bene = await addBeneficiary(gw, headers, '9876512345', '912345678901');
      const order = { mobile: '9876512345', bene_id: bene, amount: 1_000, txn_type: 'IMPS' };
      const transfer_otp = await request(`${gw.url}/api/dmt/transact/otp`, {
        headers,
        body: order,
      });
      assert.equal(transfer_otp.status, 200, JSON.stringify(transfer_otp.body));
      const transfer = await request(`${gw.url}/api/dmt/transact`, {
        headers,
        body: {
          ...order,
          otp_ref: transfer_otp.body.data.otp_ref,
          otp: lastOtp(aggregator, '9876512345'),
        },
      });
      assert.equal(transfer.status, 200, JSON.stringify(transfer.body));
      assert.equal(transfer.body.data.status, 'pending');
      const tid = transfer.body.txn_id;
      const failed = await waitStatus(gw, headers, tid, 'refund_pending');
      assert.match(failed.message, /OTP/);
      const held = round(after_recharges - 1_000 - transfer.body.data.charges);
      assert.equal(await balance(gw, headers), held);
      await verifyOk(gw);
      const otp = await request(`${gw.url}/api/dmt/refund/${tid}/otp`, { headers, body: {} });
      assert.equal(otp.status, 200, JSON.stringify(otp.body));
      assert.equal(otp.body.data.sandbox_otp, undefined);
      const good = lastOtp(aggregator, '9876512345');
      const wrong = good === '000000' ? '111111' : '000000';
      const codes: string[] = [];
      for (let i = 0; i < 3; i++) {
        const reply = await request(`${gw.url}/api/dmt/refund/${tid}`, {
          headers,
          body: { otp: wrong },
        });
        codes.push(reply.body.error?.code);
      }
      assert.deepEqual(codes, ['otp_invalid', 'otp_invalid', 'otp_attempts_exceeded']);
      const void_otp = await request(`${gw.url}/api/dmt/refund/${tid}`, {
        headers,
        body: { otp: good },
      });
      assert.equal(void_otp.body.error.code, 'otp_not_requested');
      assert.equal(await balance(gw, headers), held, 'no wrong OTP moves money');
      const fresh = await request(`${gw.url}/api/dmt/refund/${tid}/otp`, { headers, body: {} });
      assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
      const refunded = await request(`${gw.url}/api/dmt/refund/${tid}`, {
        headers,
        body: { otp: lastOtp(aggregator, '9876512345') },
      });
      assert.equal(refunded.status, 200, JSON.stringify(refunded.body));
      assert.equal(refunded.body.data.status, 'refunded');
      assert.equal(await balance(gw, headers), after_recharges, 'amount and charges back');
      await waitFor(
        () => eventsOf(receiver, tid).length === 2,
        () => JSON.stringify(eventsOf(receiver, tid)),
      );
      assert.deepEqual(eventsOf(receiver, tid), [
        'transaction.refund_pending',
        'transaction.refunded',
      ]);
      await verifyOk(gw);

      // BBPS: fetch → pay with the customer's mobile; the BBPS reference on the answer and the
      // receipt; a complaint registered at the aggregator and followed to its resolution.
      const bill = await request(`${gw.url}/api/bills/fetch`, {
        headers,
        body: { biller_id: 'BESCOM', params: { consumer_number: '1234567890' } },
      });
      assert.equal(bill.status, 200, JSON.stringify(bill.body));
      assert.equal(bill.body.data.amount, 845.5);
      const paid = await request(`${gw.url}/api/bills/pay`, {
        headers,
        body: {
          biller_id: 'BESCOM',
          params: { consumer_number: '1234567890' },
          bill_id: bill.body.data.bill_id,
          amount: 845.5,
          customer_mobile: '98765 43210',
        },
      });
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      assert.equal(paid.body.data.status, 'success');
      const pid = paid.body.txn_id;
      assert.equal(paid.body.data.bbps_ref, `CC0126330${pid.slice(-8)}`);
      const bbps_sent = aggregator.seen.find((s) => s.url === '/bbps/pay')!;
      assert.equal(bbps_sent.json.mobile, '9876543210');
      const receipt = await request(`${gw.url}/api/bills/receipt/${pid}`, { headers });
      assert.match(String(receipt.body), new RegExp(`CC0126330${pid.slice(-8)}`));
      const complaint = await request(`${gw.url}/api/bills/complaints`, {
        headers,
        body: { txn_id: pid, reason: 'transaction_successful_account_not_updated' },
      });
      assert.equal(complaint.status, 201, JSON.stringify(complaint.body));
      assert.equal(complaint.body.data.complaint_ref, 'CC0126330000042');
      assert.equal(complaint.body.data.status, 'assigned');
      const asked = aggregator.seen.find((s) => s.url === '/bbps/complaint')!;
      assert.equal(asked.json.txn, pid);
      const followed = await request(
        `${gw.url}/api/bills/complaints/${complaint.body.data.complaint_id}`,
        { headers },
      );
      assert.equal(followed.status, 200, JSON.stringify(followed.body));
      assert.equal(followed.body.data.status, 'resolved');
      assert.deepEqual(
        followed.body.data.history.map((h: any) => h.status),
        ['registered', 'assigned', 'resolved'],
      );
      assert.match(followed.body.data.resolution, /posted/);
      const status_asked = aggregator.seen.find((s) => s.url === '/bbps/complaint-status')!;
      assert.equal(status_asked.json.ref, 'CC0126330000042');
      await verifyOk(gw);
    } finally {
      await gw.stop();
      await aggregator.close();
      await receiver.close();
    }
  },
);
