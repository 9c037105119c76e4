// Every status a payment reaches, through HTTP against a real gateway with the sandbox
// providers: a success the operator reverses later (sandbox 0006: the amount back, the
// commission taken back), a hold at the provider that settles (0007), status checks that run
// out (on hold) and an operator's re-check, an operator's hold and refund, an operator's
// reversal with its audit record, a DMT transfer that fails after the bank took it
// (refund_pending) refunded by the customer's OTP after three wrong ones. A webhook for each
// change of status; after every transition the books verify and the balances are right to
// the paisa.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admin, request } from './helpers.ts';
import { json, startUpstream, type Upstream } from '../support/payments-upstream.ts';
import {
  addBeneficiary,
  balance,
  fastSandboxChain,
  ledgerBalances,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  transferWithOtp,
  verifiedRemitter,
  verifyOk,
  waitFor,
  waitStatus,
} from '../support/payments-helpers.ts';

/** The sandbox pair, its pending transactions settling only after a minute (to act on them meanwhile). */
function slowSandboxChain() {
  return fastSandboxChain().map((p) => ({ ...p, pending_ms: 60_000 }));
}

/** The webhook events received for one transaction, in order: [event, previous_status]. */
function eventsOf(receiver: Upstream, id: string): Array<[string, string]> {
  return receiver.seen
    .filter((seen) => seen.json?.data?.txn_id === id)
    .map((seen) => [seen.json.event, seen.json.previous_status]);
}

const round = (units: number) => Math.round(units * 100) / 100;

test(
  'statuses: reversed by the operator, on hold at the provider, checks run out, held and refunded and reversed by an operator; a webhook for each change; the books right after each',
  { timeout: 120_000 },
  async () => {
    const receiver = await startUpstream((_req, res) => json(res, 200, { ok: true }));
    const gw = await startPaymentsGateway(
      paymentsConfig({
        reconcile: { first_check_ms: 100, max_backoff_ms: 400, max_checks: 6 },
        providers: {
          recharge: fastSandboxChain(),
          dmt: fastSandboxChain(),
          pan: fastSandboxChain(),
          bills: slowSandboxChain(),
        },
        dmt: { otp: { resend_interval_ms: 0 } },
      }),
    );
    try {
      const { headers, account_id } = await onboard(gw, 5_000, {
        recharge: true,
        bills: true,
        dmt: true,
      });
      const api = admin(gw);
      await request(`${gw.url}/api/webhook`, {
        method: 'PUT',
        headers,
        body: { url: `${receiver.url}/hook` },
      });
      const books = async () => {
        await verifyOk(gw);
        return ledgerBalances(gw);
      };
      const start = await books();

      // 0006: success (commission 2.5% of 100 credited), then reversed by the operator.
      const before = await balance(gw, headers);
      const reversed = await request(`${gw.url}/api/recharge`, {
        headers,
        body: { operator_id: 1, number: '9876540006', amount: 100 },
      });
      assert.equal(reversed.body.data.status, 'success');
      assert.equal(reversed.body.data.commission, 2.5);
      const id = reversed.body.txn_id;
      // The reversal comes pending_ms later, whenever that is: the success's own money is
      // read from its answer, and from the wallet's history below.
      // Commission 2.5 % of 100, credited net of its TDS (#28).
      const credited = reversed.body.data.commission_credited;
      assert.equal(round(credited + reversed.body.data.tds), 2.5);
      assert.equal(reversed.body.data.balance, round(before - 100 + credited));
      const back = await waitStatus(gw, headers, id, 'reversed');
      assert.equal(back.commission, 0);
      assert.equal(back.reversal.by, 'provider');
      assert.equal(
        back.reversal.wallet,
        round(100 - credited),
        'the amount back, less the commission taken back',
      );
      assert.equal(back.reversal.commission_taken_back, 2.5, 'the gross commission, its TDS too');
      assert.deepEqual(
        back.history.map((h: any) => h.status),
        ['pending', 'success', 'reversed'],
      );
      assert.equal(await balance(gw, headers), before, 'to the paisa');
      const after_reversal = await books();
      for (const account of ['provider:recharge', 'commission:recharge'])
        assert.equal(after_reversal[account] ?? 0, start[account] ?? 0, `${account} as before`);
      await waitFor(
        () => eventsOf(receiver, id).length === 2,
        () => JSON.stringify(eventsOf(receiver, id)),
      );
      assert.deepEqual(eventsOf(receiver, id), [
        ['transaction.success', 'pending'],
        ['transaction.reversed', 'success'],
      ]);
      // The reversal is one more posting in the wallet's history: the amount back, the commission out.
      const history = await request(`${gw.url}/api/wallet/history?txn_id=${id}&order=asc`, {
        headers,
      });
      assert.deepEqual(
        history.body.data.entries.map((e: any) => e.amount),
        [-100, credited, round(100 - credited)],
      );
      // Reversed is final: neither an operator nor the provider can move it again.
      const again = await api.post(`/admin/transactions/${id}/reverse`, { reason: 'twice' });
      assert.equal(again.status, 409);
      assert.equal(again.body.error.code, 'transition_not_allowed');

      // 0007: on hold at the provider, then success on reconciliation.
      const held = await request(`${gw.url}/api/recharge`, {
        headers,
        body: { operator_id: 1, number: '9876540007', amount: 200 },
      });
      assert.equal(held.body.status, true);
      assert.equal(held.body.data.status, 'on_hold');
      assert.equal(held.body.data.balance, round(before - 200), 'the amount stays held');
      await books();
      const settled = await waitStatus(gw, headers, held.body.txn_id, 'success');
      assert.equal(settled.commission, 5); // Airtel's 2.5 %
      assert.equal(
        await balance(gw, headers),
        round(before - 200 + settled.commission_breakup.net),
      );
      await waitFor(
        () => eventsOf(receiver, held.body.txn_id).length === 2,
        () => JSON.stringify(eventsOf(receiver, held.body.txn_id)),
      );
      assert.deepEqual(eventsOf(receiver, held.body.txn_id), [
        ['transaction.on_hold', 'pending'],
        ['transaction.success', 'on_hold'],
      ]);
      await books();

      // An operator reverses a success (confirmed with the operator out of band): audited.
      const by_admin = await api.post(`/admin/transactions/${held.body.txn_id}/reverse`, {
        reason: 'operator confirmed the recharge failed',
      });
      assert.equal(by_admin.status, 200, JSON.stringify(by_admin.body));
      assert.equal(by_admin.body.status, 'reversed');
      assert.equal(by_admin.body.reversal.by, 'admin');
      assert.equal(await balance(gw, headers), before);
      const audit = await api.get(`/admin/audit?action=transaction.reverse`);
      assert.equal(audit.body.data[0].details.txn_id, held.body.txn_id);
      assert.equal(audit.body.data[0].details.reason, 'operator confirmed the recharge failed');
      assert.deepEqual(
        [audit.body.data[0].details.from, audit.body.data[0].details.to],
        ['success', 'reversed'],
      );
      const no_reason = await api.post(`/admin/transactions/${held.body.txn_id}/refund`, {});
      assert.equal(no_reason.status, 400);
      await books();

      // Bills pending for a minute: status checks run out (max_checks 6) → on hold; re-checked → pending.
      const bill = await request(`${gw.url}/api/bills/pay`, {
        headers,
        body: {
          biller_id: 'GENUSPRE',
          params: { meter_number: '1234560002' },
          amount: 300,
          customer_mobile: '9876543210',
        },
      });
      assert.equal(bill.body.data.status, 'pending');
      const stalled = await waitStatus(gw, headers, bill.body.txn_id, 'on_hold');
      assert.equal(stalled.status_checks.stalled, true);
      assert.equal(stalled.status_checks.count, 6);
      assert.equal(await balance(gw, headers), round(before - 300));
      const rechecked = await api.post(`/admin/transactions/${bill.body.txn_id}/recheck`, {});
      assert.equal(rechecked.status, 200);
      assert.equal(rechecked.body.status, 'pending');
      assert.equal(rechecked.body.status_checks.stalled, false);
      // An operator holds it for a look, then refunds it.
      const hold = await api.post(`/admin/transactions/${bill.body.txn_id}/hold`, {
        reason: 'customer disputes the biller',
      });
      assert.equal(hold.status, 200, JSON.stringify(hold.body));
      assert.equal(hold.body.status, 'on_hold');
      await books();
      const refund = await api.post(`/admin/transactions/${bill.body.txn_id}/refund`, {
        reason: 'biller confirmed it was not received',
      });
      assert.equal(refund.status, 200, JSON.stringify(refund.body));
      assert.equal(refund.body.status, 'refunded');
      assert.equal(refund.body.refund.amount, 300);
      assert.equal(await balance(gw, headers), before);
      await waitFor(
        () => eventsOf(receiver, bill.body.txn_id).length === 4,
        () => JSON.stringify(eventsOf(receiver, bill.body.txn_id)),
      );
      assert.deepEqual(eventsOf(receiver, bill.body.txn_id), [
        ['transaction.on_hold', 'pending'],
        ['transaction.pending', 'on_hold'],
        ['transaction.on_hold', 'pending'],
        ['transaction.refunded', 'on_hold'],
      ]);
      await books();

      // DMT: the bank takes the transfer, then it fails (0003): refund_pending; the customer's OTP
      // refunds it, after three wrong OTPs cancelled the first one.
      await verifiedRemitter(gw, headers, '9876512345');
      const bene = await addBeneficiary(gw, headers, '9876512345', '912345670003');
      const transfer = await transferWithOtp(gw, headers, {
        mobile: '9876512345',
        bene_id: bene,
        amount: 1_000,
        txn_type: 'IMPS',
      });
      assert.equal(transfer.body.data.status, 'pending');
      const tid = transfer.body.txn_id;
      const failed = await waitStatus(gw, headers, tid, 'refund_pending');
      assert.match(failed.message, /OTP/);
      const held_dmt = round(before - 1_000 - 10);
      assert.equal(await balance(gw, headers), held_dmt, 'amount and charges still held');
      const limit = await request(`${gw.url}/api/dmt/remitter/9876512345`, { headers });
      assert.equal(limit.body.data.used, 0, "the failed transfer gives the remitter's month back");
      await books();
      const none = await request(`${gw.url}/api/dmt/refund/${tid}`, {
        headers,
        body: { otp: '123456' },
      });
      assert.equal(none.body.error.code, 'otp_not_requested');
      const otp = await request(`${gw.url}/api/dmt/refund/${tid}/otp`, { headers, body: {} });
      assert.equal(otp.status, 200, JSON.stringify(otp.body));
      assert.equal(otp.body.data.mobile, '9876512345');
      const good = String(otp.body.data.sandbox_otp);
      const wrong = good === '000000' ? '111111' : '000000';
      const codes: string[] = [];
      for (let i = 0; i < 3; i++) {
        const reply = await request(`${gw.url}/api/dmt/refund/${tid}`, {
          headers,
          body: { otp: wrong },
        });
        assert.equal(reply.status, 422);
        codes.push(reply.body.error.code);
      }
      assert.deepEqual(codes, ['otp_invalid', 'otp_invalid', 'otp_attempts_exceeded']);
      const cancelled = await request(`${gw.url}/api/dmt/refund/${tid}`, {
        headers,
        body: { otp: good },
      });
      assert.equal(cancelled.body.error.code, 'otp_not_requested', 'the cancelled OTP is void');
      assert.equal(await balance(gw, headers), held_dmt, 'no wrong OTP moves money');
      const fresh = await request(`${gw.url}/api/dmt/refund/${tid}/otp`, { headers, body: {} });
      const ok = await request(`${gw.url}/api/dmt/refund/${tid}`, {
        headers,
        body: { otp: String(fresh.body.data.sandbox_otp) },
      });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal(ok.body.data.status, 'refunded');
      assert.equal(ok.body.data.refund.amount, 1_010);
      assert.equal(ok.body.data.balance, before);
      const twice = await request(`${gw.url}/api/dmt/refund/${tid}`, {
        headers,
        body: { otp: String(fresh.body.data.sandbox_otp) },
      });
      assert.equal(twice.status, 409);
      assert.equal(twice.body.error.code, 'not_refund_pending');
      await waitFor(
        () => eventsOf(receiver, tid).length === 2,
        () => JSON.stringify(eventsOf(receiver, tid)),
      );
      assert.deepEqual(eventsOf(receiver, tid), [
        ['transaction.refund_pending', 'pending'],
        ['transaction.refunded', 'refund_pending'],
      ]);
      const end = await books();
      for (const [account, amount] of Object.entries(end))
        if (!account.startsWith('wallet:') && !account.startsWith('funding:'))
          assert.equal(
            amount - (start[account] ?? 0),
            0,
            `${account}: every payment of this test was undone, so it moved nothing net`,
          );
      assert.equal(end[`wallet:${account_id}`], 5_000e6);
      assert.equal(end[`hold:${account_id}`] ?? 0, 0);
    } finally {
      await gw.stop();
      await receiver.close();
    }
  },
);
