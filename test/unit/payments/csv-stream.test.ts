// A CSV download (streamCsv) over real HTTP on loopback: rows are written as the source yields
// them, and the source is never asked for more while the response pushes back, so memory
// holds one batch, never the download; a client that leaves, or takes nothing for
// `stall_ms`, stops the source. Asserted on
// structure (what was pulled when, how many rows each write held), never on time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, get, type IncomingMessage, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { Response } from 'express';
import { clientGone, ClientGoneError } from '../../../gateway/http/client-gone.ts';
import { csvLine, streamCsv, type Row } from '../../../gateway/payments/shared/csv.ts';
import { Turns } from '../../../gateway/store/turns.ts';
import { parseCsv } from '../../support/payments-helpers.ts';

const COLUMNS = ['n', 'text', 'amount'];
const BATCH = 100;
/** Far more than the kernel's socket buffers hold (about 4 MiB here), so that the response must push back. */
const ROWS = 60_000;

const rowOf = (n: number): Row => ({
  n,
  text: n % 7 === 0 ? `=formula, "quoted" ${n}` : `row ${n} ${'x'.repeat(150)}`,
  amount: -n / 100,
});

/** A source of ROWS rows in batches of BATCH that records how it was pulled (and fails after `fail_at` rows). */
function source(res: ServerResponse, seen: { written: number }, fail_at = Infinity) {
  const log = { pulled: 0, pulled_under_backpressure: 0, most_unwritten: 0, finished: false };
  async function* rows(): AsyncGenerator<Row[]> {
    try {
      for (let n = 0; n < ROWS; n += BATCH) {
        if (res.writableNeedDrain) log.pulled_under_backpressure++;
        if (n >= fail_at) throw new Error('a read failed');
        const batch = Array.from({ length: Math.min(BATCH, ROWS - n) }, (_, i) => rowOf(n + i));
        log.pulled += batch.length;
        log.most_unwritten = Math.max(log.most_unwritten, log.pulled - seen.written);
        yield batch;
      }
    } finally {
      log.finished = true;
    }
  }
  return { rows: rows(), log };
}

interface Served {
  res: ServerResponse;
  seen: { written: number; writes: number; most_per_write: number };
  log: ReturnType<typeof source>['log'];
  /** 'ended', or what streamCsv rejected with. */
  done: Promise<unknown>;
}

/** A server whose one route streams the source's CSV; its response and outcome go to the test. */
async function serve({ fail_at = Infinity, stall_ms = 600_000 } = {}): Promise<{
  url: string;
  close: () => void;
  next: Promise<Served>;
}> {
  let hand!: (served: Served) => void;
  const next = new Promise<Served>((resolve) => (hand = resolve));
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const seen = { written: 0, writes: 0, most_per_write: 0 };
    const write = res.write.bind(res) as (chunk: string) => boolean;
    res.write = ((chunk: string) => {
      const rows = chunk.split('\r\n').length - 1;
      seen.written += rows;
      seen.writes++;
      seen.most_per_write = Math.max(seen.most_per_write, rows);
      return write(chunk);
    }) as typeof res.write;
    const { rows, log } = source(res, seen, fail_at);
    const signal = clientGone(req, res);
    const turns = new Turns();
    const download = { pacer: turns.pacer(signal), signal, stall_ms };
    const done = streamCsv(res as unknown as Response, download, 'rows', COLUMNS, rows).then(
      () => 'ended',
      (error: unknown) => {
        res.end(); // as the gateway's error handler does once headers are sent
        return error;
      },
    );
    hand({ res, seen, log, done });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rows.csv`,
    close: () => server.close(),
    next,
  };
}

/** Waits (event-loop turns, no timers) until `check` holds. */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setImmediate(resolve));
}

test('a CSV download is written batch by batch, never reading on while the client pushes back, and arrives whole', async () => {
  const server = await serve();
  try {
    const response = await new Promise<IncomingMessage>((resolve) => get(server.url, resolve));
    response.pause(); // a slow client: nothing is read until the server has had to wait
    const { res, seen, log, done } = await server.next;
    await until(() => res.writableNeedDrain);
    const pulled_when_blocked = log.pulled;
    assert.ok(pulled_when_blocked < ROWS, 'the download waits for the client before reading on');
    response.setEncoding('utf8');
    let text = '';
    response.on('data', (chunk: string) => (text += chunk));
    response.resume();
    await once(response, 'end');
    assert.equal(await done, 'ended');
    const [header, ...rows] = parseCsv(text);
    assert.deepEqual(header, COLUMNS);
    assert.equal(rows.length, ROWS);
    const expected = Array.from({ length: ROWS }, (_, n) => csvLine(COLUMNS, rowOf(n))).join('');
    assert.equal(
      text,
      `${COLUMNS.join(',')}\r\n${expected}`,
      'every row, in order, as csvLine writes it',
    );
    assert.equal(
      log.pulled_under_backpressure,
      0,
      'no batch was read while the response pushed back',
    );
    assert.ok(log.most_unwritten <= BATCH, `at most one batch unwritten (${log.most_unwritten})`);
    assert.ok(seen.most_per_write <= BATCH, `at most one batch per write (${seen.most_per_write})`);
    assert.ok(log.finished);
  } finally {
    server.close();
  }
});

test('a client that leaves mid-download stops it: the source is closed unfinished', async () => {
  const server = await serve();
  try {
    const response = await new Promise<IncomingMessage>((resolve) => get(server.url, resolve));
    response.pause();
    const { res, log, done } = await server.next;
    await until(() => res.writableNeedDrain);
    response.destroy();
    const outcome = await done;
    assert.ok(outcome instanceof ClientGoneError, String(outcome));
    assert.ok(log.finished, 'the source was closed');
    assert.ok(log.pulled < ROWS, `${log.pulled} of ${ROWS} rows read`);
  } finally {
    server.close();
  }
});

test('a read that fails mid-download drops the connection: the client gets a cut body, never a complete-looking CSV', async () => {
  const server = await serve({ fail_at: 1_000 });
  try {
    const response = await new Promise<IncomingMessage>((resolve) => get(server.url, resolve));
    const { done } = await server.next;
    const body = new Promise<string>((resolve, reject) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve(text));
      response.on('error', reject);
      response.on('aborted', () => reject(new Error('aborted')));
    });
    const outcome = await done;
    assert.match(String(outcome), /a read failed/);
    await assert.rejects(body, 'the body ends in an error, not a clean end');
  } finally {
    server.close();
  }
});

test('a client that takes nothing for stall_ms is dropped: the download stops and its connection is destroyed', async () => {
  const server = await serve({ stall_ms: 1_000 });
  try {
    const response = await new Promise<IncomingMessage>((resolve) => get(server.url, resolve));
    response.pause(); // and never resumed
    response.on('error', () => {});
    const { res, log, done } = await server.next;
    const outcome = await done;
    assert.ok(outcome instanceof ClientGoneError, String(outcome));
    assert.match((outcome as Error).message, /took none of the download for 1000 ms/);
    assert.ok(log.finished && log.pulled < ROWS, `${log.pulled} of ${ROWS} rows read`);
    assert.ok(res.destroyed, "the server dropped the client's connection");
    response.destroy();
  } finally {
    server.close();
  }
});
