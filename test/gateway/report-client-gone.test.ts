// A report whose client goes away does not run for nobody: one waiting in the queue leaves it
// unrun, one running stops at its next turn, and either way its slot is free again. Over real
// HTTP against the gateway process, with the one running slot (reports.max_running 1) held
// deterministically: a CSV download pipelined on a raw connection behind a chat request whose
// upstream never answers cannot send a byte until that request is done, so its stream waits
// for 'drain' and keeps the slot. Every wait is on /metrics state, never on a sleep.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { once } from 'node:events';
import {
  behindHangingChat,
  reportMetrics,
  startHoldingGateway,
  waitFor,
} from '../support/payments-helpers.ts';
import { admin, createFundedAccount } from './helpers.ts';

test('a report whose client leaves is dropped from the queue unrun, or stopped while running, and frees its slot', async () => {
  const { gateway, upstream } = await startHoldingGateway({
    max_running: 1,
    max_queued: 4,
    client_stall_ms: 3_600_000,
  });
  const metrics = () => reportMetrics(gateway.url);
  const show = async () => JSON.stringify(await metrics());
  try {
    const { key, account_id } = await createFundedAccount(gateway, 100);
    // Enough wallet rows that the held download's first batch is more than Node buffers for a
    // response still waiting for its connection (16 KiB), so that it must wait for 'drain'.
    const api = admin(gateway);
    for (let i = 0; i < 200; i++) {
      const credit = await api.post(`/admin/accounts/${account_id}/credit`, {
        amount: 1,
        reference: `many-${i}`,
      });
      assert.equal(credit.status, 200);
    }

    // The holder: a chat request that never gets its answer, and behind it on the same
    // connection the admin's wallet CSV, which runs in the one slot and cannot send.
    const socket = connect(gateway.port, '127.0.0.1');
    await once(socket, 'connect');
    socket.on('error', () => {});
    socket.write(
      behindHangingChat(
        key,
        `GET /admin/reports/wallet?format=csv HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
          `Authorization: Bearer ${gateway.admin_token}\r\n\r\n`,
      ),
    );
    await waitFor(
      async () => (await metrics()).aihub_reports_running === 1 && upstream.received.length === 1,
      show,
    );
    const before = await metrics();
    assert.equal(before.aihub_reports_started_total, 1);

    // A second report queues for the slot; its client gives up while it waits.
    const leaving = new AbortController();
    const queued = fetch(`${gateway.url}/admin/reports/transactions?format=csv`, {
      headers: { authorization: `Bearer ${gateway.admin_token}` },
      signal: leaving.signal,
    }).catch((error: unknown) => error);
    await waitFor(async () => (await metrics()).aihub_reports_queued === 1, show);
    leaving.abort();
    assert.equal(((await queued) as Error).name, 'AbortError');
    await waitFor(async () => (await metrics()).aihub_reports_queued === 0, show);
    const after_queued = await metrics();
    assert.equal(after_queued['aihub_reports_cancelled_total{stage="queued"}'], 1);
    assert.equal(after_queued.aihub_reports_running, 1, 'the holder still runs');
    assert.equal(after_queued.aihub_reports_started_total, 1, 'the queued report never ran');

    // The holder's client goes away: the running download stops and frees the slot, and the
    // report that left the queue does not take it.
    socket.destroy();
    await waitFor(async () => (await metrics()).aihub_reports_running === 0, show);
    const after_running = await metrics();
    assert.equal(after_running['aihub_reports_cancelled_total{stage="running"}'], 1);
    assert.equal(after_running.aihub_reports_started_total, 1, 'nothing else ran');
    assert.equal(after_running.aihub_reports_queued, 0);

    // The slot serves the next report.
    const next = await api.get<{ total: number }>(`/admin/reports/wallet?account_id=${account_id}`);
    assert.equal(next.status, 200);
    assert.ok(next.body.total > 200, `${next.body.total} wallet rows`);
    assert.equal((await metrics()).aihub_reports_started_total, 2);
  } finally {
    await gateway.stop();
    await upstream.close();
  }
});
