// Every row of CONTRACT.md's sandbox table, through the real gateway: the answer, the wallet,
// the commission, the transaction's attempts and refund link, and `verify` after each.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, runVerify, startGateway, type Gateway } from './helpers.ts';
import {
  balance,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  waitFinal,
} from '../support/payments-helpers.ts';

async function verifyOk(gw: Gateway) {
  const verify = await runVerify(gw.data_dir);
  assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  return JSON.parse(verify.stdout) as { open_holds: number };
}

async function walletEntries(gw: Gateway, headers: Record<string, string>, txn_id: string) {
  const reply = await request(`${gw.url}/api/wallet/history?txn_id=${txn_id}&order=asc`, {
    headers,
  });
  assert.equal(reply.status, 200);
  return reply.body.data.entries as Array<{
    kind: string;
    amount: number;
    opening_balance: number;
    closing_balance: number;
    posting_id: string;
  }>;
}

test('sandbox outcomes: success, decline, pending → success, pending → failed, timeout → failover, all fail', async () => {
  const gw = await startPaymentsGateway();
  try {
    const { headers } = await onboard(gw, 1_000);
    const recharge = (number: string) =>
      request(`${gw.url}/api/recharge`, { headers, body: { operator_id: 1, number, amount: 100 } });

    // anything else: success, 2.5 % commission as its own posting, credited net of 2 % TDS (194H)
    const ok = await recharge('9876543210');
    assert.equal(ok.body.data.status, 'success');
    assert.equal(ok.body.data.commission, 2.5);
    assert.equal(ok.body.data.tds, 0.05);
    assert.equal(ok.body.data.commission_credited, 2.45);
    assert.equal(await balance(gw, headers), 902.45);
    assert.deepEqual(
      (await walletEntries(gw, headers, ok.body.txn_id)).map((e) => [e.kind, e.amount]),
      [
        ['hold', -100],
        ['commission', 2.45],
      ],
    );
    assert.equal((await verifyOk(gw)).open_holds, 0);

    // 0001: declined, status false, refunded by a new posting, no commission
    const declined = await recharge('9876540001');
    assert.equal(declined.status, 200);
    assert.equal(declined.body.status, false);
    assert.equal(declined.body.data.status, 'failed');
    assert.equal(declined.body.data.commission, 0);
    assert.equal(declined.body.data.balance, 902.45);
    assert.equal(await balance(gw, headers), 902.45);
    const declined_txn = (
      await request(`${gw.url}/api/transactions/${declined.body.txn_id}`, { headers })
    ).body.data;
    assert.equal(declined_txn.attempts.length, 1, 'a decline is not failed over');
    assert.deepEqual(
      (await walletEntries(gw, headers, declined.body.txn_id)).map((e) => [e.kind, e.amount]),
      [
        ['hold', -100],
        ['refund', 100],
      ],
    );
    assert.equal(
      declined_txn.refund.posting_id,
      (await walletEntries(gw, headers, declined.body.txn_id))[1]!.posting_id,
    );
    await verifyOk(gw);

    // 0002: pending (held, no commission yet), then success on reconciliation
    const pending_ok = await recharge('9876540002');
    assert.equal(pending_ok.body.status, true);
    assert.equal(pending_ok.body.data.status, 'pending');
    assert.equal(pending_ok.body.data.balance, 802.45, 'the amount stays held');
    const settled = await waitFinal(gw, headers, pending_ok.body.txn_id);
    assert.equal(settled.status, 'success');
    assert.equal(settled.commission, 2.5);
    assert.ok(settled.status_checks.count >= 1);
    assert.deepEqual(
      settled.history.map((h: any) => h.status),
      ['pending', 'pending', 'success'],
    );
    assert.equal(await balance(gw, headers), 804.9);
    await verifyOk(gw);

    // 0003: pending, then failed and refunded on reconciliation
    const pending_fail = await recharge('9876540003');
    assert.equal(pending_fail.body.data.status, 'pending');
    assert.equal(await balance(gw, headers), 704.9);
    const failed = await waitFinal(gw, headers, pending_fail.body.txn_id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.refund.amount, 100);
    assert.equal(await balance(gw, headers), 804.9);
    await verifyOk(gw);

    // 0004: the first provider times out, the next one succeeds; both attempts are on the transaction
    const failover = await recharge('9876540004');
    assert.equal(failover.body.data.status, 'success');
    const failover_txn = (
      await request(`${gw.url}/api/transactions/${failover.body.txn_id}`, { headers })
    ).body.data;
    assert.deepEqual(
      failover_txn.attempts.map((a: any) => [a.provider, a.outcome, a.error ?? null]),
      [
        ['sandbox-a', 'unavailable', 'timeout'],
        ['sandbox-b', 'success', null],
      ],
    );
    assert.equal(failover_txn.provider, 'sandbox-b');
    assert.equal(await balance(gw, headers), 707.35);
    await verifyOk(gw);

    // 0005: every provider fails: failed and refunded
    const all_fail = await recharge('9876540005');
    assert.equal(all_fail.body.status, false);
    assert.equal(all_fail.body.data.status, 'failed');
    const all_fail_txn = (
      await request(`${gw.url}/api/transactions/${all_fail.body.txn_id}`, { headers })
    ).body.data;
    assert.deepEqual(
      all_fail_txn.attempts.map((a: any) => [a.provider, a.outcome]),
      [
        ['sandbox-a', 'unavailable'],
        ['sandbox-b', 'unavailable'],
      ],
    );
    assert.equal(await balance(gw, headers), 707.35);
    const report = await verifyOk(gw);
    assert.equal(report.open_holds, 0);

    // Another account cannot see these transactions.
    const other = await onboard(gw, 0);
    assert.equal(
      (await request(`${gw.url}/api/transactions/${ok.body.txn_id}`, { headers: other.headers }))
        .status,
      404,
    );
    const listed = await request(`${gw.url}/api/transactions?status=failed`, { headers });
    assert.deepEqual(
      listed.body.data.transactions.map((t: any) => t.txn_id).sort(),
      [declined.body.txn_id, pending_fail.body.txn_id, all_fail.body.txn_id].sort(),
    );
    const history = await request(`${gw.url}/api/wallet/history?limit=500&order=asc`, { headers });
    const entries = history.body.data.entries;
    for (let i = 1; i < entries.length; i++)
      assert.equal(entries[i].opening_balance, entries[i - 1].closing_balance);
    assert.equal(history.body.data.closing_balance, 707.35);
  } finally {
    await gw.stop();
  }
});

test('a pending recharge is reconciled after a crash (SIGKILL) and a restart, never refunded blindly', async () => {
  // Status checks start late and the sandbox keeps it pending for a while, so it is still pending at the crash.
  const slow = paymentsConfig({
    reconcile: { first_check_ms: 60_000 },
    providers: {
      recharge: [
        {
          type: 'sandbox',
          name: 'sandbox-a',
          hang_on: ['0004'],
          timeout_ms: 300,
          pending_ms: 1_000,
        },
        { type: 'sandbox', name: 'sandbox-b', timeout_ms: 300, pending_ms: 1_000 },
      ],
    },
  });
  const gw = await startPaymentsGateway(slow);
  let again: Gateway | null = null;
  try {
    const { headers } = await onboard(gw, 500);
    const ok_later = await request(`${gw.url}/api/recharge`, {
      headers,
      body: { operator_id: 4, number: '9876540002', amount: 100 },
    });
    const fail_later = await request(`${gw.url}/api/recharge`, {
      headers,
      body: { operator_id: 4, number: '9876540003', amount: 50 },
    });
    assert.equal(ok_later.body.data.status, 'pending');
    assert.equal(fail_later.body.data.status, 'pending');
    assert.equal(await balance(gw, headers), 350);
    await gw.stop('SIGKILL');
    const mid = await runVerify(gw.data_dir);
    assert.equal(mid.code, 0, mid.stdout + mid.stderr);
    assert.equal(JSON.parse(mid.stdout).open_holds, 2, 'both holds survive the crash');

    const fast = paymentsConfig({
      providers: {
        recharge: [
          {
            type: 'sandbox',
            name: 'sandbox-a',
            hang_on: ['0004'],
            timeout_ms: 300,
            pending_ms: 1_000,
          },
          { type: 'sandbox', name: 'sandbox-b', timeout_ms: 300, pending_ms: 1_000 },
        ],
      },
    });
    again = await startPaymentsGateway(fast, { data_dir: gw.data_dir });
    const succeeded = await waitFinal(again, headers, ok_later.body.txn_id);
    const failed = await waitFinal(again, headers, fail_later.body.txn_id);
    assert.equal(succeeded.status, 'success');
    assert.equal(succeeded.commission, 4); // BSNL: 4 %
    assert.equal(failed.status, 'failed');
    assert.equal(failed.refund.amount, 50);
    assert.equal(await balance(again, headers), 403.92); // 4 % commission less 2 % TDS
    assert.equal(await again.stop(), 0);
    const after = await runVerify(gw.data_dir);
    assert.equal(after.code, 0, after.stdout + after.stderr);
    assert.equal(JSON.parse(after.stdout).open_holds, 0);
  } finally {
    await gw.stop();
    await again?.stop();
  }
});

test('live mode without configured providers: recharge answers 503 and holds nothing', async () => {
  const gw = await startGateway({ env: { AIHUB_MODE: 'live' } });
  try {
    const { headers } = await onboard(gw, 100);
    const reply = await request(`${gw.url}/api/recharge`, {
      headers,
      body: { operator_id: 1, number: '9876543210', amount: 10 },
    });
    assert.equal(reply.status, 503);
    assert.equal(reply.body.error.code, 'no_provider');
    assert.equal(await balance(gw, headers), 100);
    assert.ok(gw.output.some((line) => line.includes('skipped in live mode')));
  } finally {
    await gw.stop();
  }
});
