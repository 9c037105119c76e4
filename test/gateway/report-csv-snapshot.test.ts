// A CSV download is one snapshot: its X-Total-Count and its rows are the rows committed up to
// one point, whatever is committed while it is held. Over real HTTP against the gateway
// process, the download is held deterministically once its count is taken and its rows have
// begun: it is pipelined on a raw connection behind a chat request whose upstream never
// answers, so it cannot send a byte and waits for 'drain' (seen on /metrics as
// aihub_reports_downloads_waiting). Wallet postings committed meanwhile are not in the file.
// Every wait is on /metrics state or the socket, never on a sleep.
// (The race between the count pass and the rows pass themselves is narrower than any hold a
// client can make; test/unit/payments/report-snapshot.test.ts commits between the two.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { once } from 'node:events';
import {
  behindHangingChat,
  parseCsv,
  reportMetrics,
  startHoldingGateway,
  waitFor,
} from '../support/payments-helpers.ts';
import { admin, createFundedAccount } from './helpers.ts';

/** The last response of a raw HTTP/1.1 exchange: its headers (lower-cased) and its chunked body. */
function lastResponse(bytes: Buffer): {
  status: number;
  headers: Record<string, string>;
  body: string;
} {
  const start = bytes.lastIndexOf('HTTP/1.1 ');
  const head_end = bytes.indexOf('\r\n\r\n', start);
  const [status_line, ...lines] = bytes.subarray(start, head_end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  assert.equal(headers['transfer-encoding'], 'chunked');
  const parts: Buffer[] = [];
  let at = head_end + 4;
  for (;;) {
    const line_end = bytes.indexOf('\r\n', at);
    const size = parseInt(bytes.subarray(at, line_end).toString('latin1'), 16);
    if (size === 0) break;
    parts.push(bytes.subarray(line_end + 2, line_end + 2 + size));
    at = line_end + 2 + size + 2;
  }
  return {
    status: Number(status_line!.split(' ')[1]),
    headers,
    body: Buffer.concat(parts).toString('utf8'),
  };
}

test('a CSV download held after its count sends exactly X-Total-Count rows, none committed meanwhile', async () => {
  const { gateway, upstream } = await startHoldingGateway({ client_stall_ms: 3_600_000 });
  const metrics = () => reportMetrics(gateway.url);
  const show = async () => JSON.stringify(await metrics());
  try {
    const { key, account_id } = await createFundedAccount(gateway, 100);
    // Enough rows that the held download's first batch is more than Node buffers for a
    // response still waiting for its connection (16 KiB), so that it must wait for 'drain'.
    const api = admin(gateway);
    const credit = async (reference: string) => {
      const reply = await api.post(`/admin/accounts/${account_id}/credit`, {
        amount: 1,
        reference,
      });
      assert.equal(reply.status, 200);
    };
    for (let i = 0; i < 200; i++) await credit(`early-${i}`);
    const path = `/admin/reports/wallet?account_id=${account_id}&limit=500`;
    const before = await api.get<{ total: number; rows: Array<{ posting_id: string }> }>(path);
    assert.equal(before.status, 200);

    const socket = connect(gateway.port, '127.0.0.1');
    await once(socket, 'connect');
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    const closed = once(socket, 'close');
    socket.write(
      behindHangingChat(
        key,
        `GET /admin/reports/wallet?account_id=${account_id}&format=csv HTTP/1.1\r\n` +
          `Host: 127.0.0.1\r\nAuthorization: Bearer ${gateway.admin_token}\r\nConnection: close\r\n\r\n`,
      ),
    );
    // Counted, its rows begun, and held by its client.
    await waitFor(async () => (await metrics()).aihub_reports_downloads_waiting === 1, show);

    for (let i = 0; i < 5; i++) await credit(`late-${i}`);
    const now = await api.get<{ total: number }>(path);
    assert.equal(now.body.total, before.body.total + 5, 'the late credits are committed');

    // The chat request fails when its upstream goes away; the download then flows.
    await upstream.close();
    await closed;
    const csv = lastResponse(Buffer.concat(received));
    assert.equal(csv.status, 200);
    const [header, ...rows] = parseCsv(csv.body);
    const total = Number(csv.headers['x-total-count']);
    assert.equal(total, before.body.total, 'X-Total-Count: the rows as of the count');
    assert.equal(rows.length, total, 'rows sent = X-Total-Count');
    const posting = header!.indexOf('posting_id');
    assert.deepEqual(
      rows.map((row) => row[posting]),
      before.body.rows.map((row) => row.posting_id),
      'the rows committed before the count, none after',
    );
    assert.equal((await metrics()).aihub_reports_downloads_waiting, 0);
  } finally {
    await gateway.stop();
    await upstream.close().catch(() => {});
  }
});
