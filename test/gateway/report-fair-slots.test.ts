// Issue #25, item 7: two accounts holding two never-read CSV downloads each took all four
// report slots, and a third account's five-row JSON report waited for one (59 s in the attack
// run). A download stalled on its client now keeps its slot only until another account's
// report needs one. Over real HTTP against the gateway process: each download is pipelined
// on a raw connection behind a chat request whose upstream never answers, so it cannot send
// a byte and waits for 'drain' for as long as the test likes. Every wait is on /metrics state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import {
  behindHangingChat,
  reportMetrics,
  startHoldingGateway,
  waitFor,
} from '../support/payments-helpers.ts';
import { admin, createFundedAccount, request } from './helpers.ts';

test("item 7: four stalled downloads of two accounts do not keep a third account's report waiting; they finish when their clients read", async () => {
  const { gateway, upstream } = await startHoldingGateway({
    max_running: 4,
    max_concurrent_per_account: 2,
    client_stall_ms: 3_600_000,
  });
  const metrics = () => reportMetrics(gateway.url);
  const show = async () => JSON.stringify(await metrics());
  const sockets: Socket[] = [];
  let let_go: Promise<void> | null = null;
  const release = () => (let_go ??= upstream.close());
  try {
    const api = admin(gateway);
    const holders = [
      await createFundedAccount(gateway, 100),
      await createFundedAccount(gateway, 100),
    ];
    // Enough wallet rows that a download's first batch is more than Node buffers for a
    // response still waiting for its connection (16 KiB): it must wait for 'drain'.
    for (const holder of holders)
      for (let i = 0; i < 200; i++)
        assert.equal(
          (
            await api.post(`/admin/accounts/${holder.account_id}/credit`, {
              amount: 1,
              reference: `rows-${holder.account_id}-${i}`,
            })
          ).status,
          200,
        );
    const received = new Map<Socket, Buffer[]>();
    for (const holder of holders)
      for (let n = 0; n < 2; n++) {
        const socket = connect(gateway.port, '127.0.0.1');
        await once(socket, 'connect');
        socket.on('error', () => {});
        received.set(socket, []);
        socket.on('data', (chunk: Buffer) => received.get(socket)!.push(chunk));
        socket.write(
          behindHangingChat(
            holder.key,
            `GET /api/reports/wallet?format=csv HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
              `X-API-KEY: ${holder.key}\r\nConnection: close\r\n\r\n`,
          ),
        );
        sockets.push(socket);
      }
    // All four downloads run and wait for their clients: every slot is taken.
    await waitFor(async () => {
      const m = await metrics();
      return m.aihub_reports_downloads_waiting === 4 && m.aihub_reports_running === 4;
    }, show);

    // A third account's small report: it gets a slot at once, never waits in the queue.
    const third = await createFundedAccount(gateway, 5);
    let answered: { status: number; body: any } | null = null;
    const pending = request(`${gateway.url}/api/reports/wallet`, {
      headers: { 'x-api-key': third.key },
    }).then((reply) => (answered = reply));
    await waitFor(
      async () => answered !== null || ((await metrics()).aihub_reports_queued ?? 0) > 0,
      show,
    );
    const queued = (await metrics()).aihub_reports_queued;
    await release(); // whatever happened: let the held downloads go at the end
    await pending;
    assert.equal(queued, 0, "the third account's report did not wait behind stalled downloads");
    assert.equal(answered!.status, 200, JSON.stringify(answered!.body));
    assert.equal(answered!.body.data.total, 1);

    // The stalled downloads go on once their clients read (the chats ahead of them fail now):
    // each waits its turn for a slot again and sends every row.
    await Promise.all(sockets.map((socket) => once(socket, 'close')));
    for (const socket of sockets) {
      const text = Buffer.concat(received.get(socket)!).toString('latin1');
      const head = text.lastIndexOf('HTTP/1.1 200');
      assert.ok(head !== -1, `a CSV answer: ${text.slice(0, 200)}`);
      assert.match(text.slice(head), /x-total-count: 201/i);
      assert.ok(text.trimEnd().endsWith('0'), 'the chunked body is complete');
    }
    await waitFor(async () => (await metrics()).aihub_reports_running === 0, show);
    assert.equal((await metrics()).aihub_reports_started_total, 5);
  } finally {
    for (const socket of sockets) socket.destroy();
    await release();
    await gateway.stop();
  }
});
