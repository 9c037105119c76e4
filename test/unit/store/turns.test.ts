// The gateway-wide turns of background work (gateway/store/turns.ts): chunks of several
// readers run one per turn of the event loop, in the order they asked; while other work keeps
// the loop busy, the budget holds chunks back (timers) to keep them within their share.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Turns } from '../../../gateway/store/turns.ts';

/** Keeps the thread busy for `ms` (a chunk of work, or other requests' work). */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

test('readers take turns, one chunk per grant, in the order they asked', async () => {
  const turns = new Turns();
  const order: string[] = [];
  const reader = async (name: string) => {
    const pacer = turns.pacer();
    try {
      for (let i = 0; i < 3; i++) {
        await pacer.next();
        order.push(`${name}${i}`);
      }
    } finally {
      pacer.end();
    }
  };
  await Promise.all([reader('a'), reader('b')]);
  assert.deepEqual(order, ['a0', 'b0', 'a1', 'b1', 'a2', 'b2']);
});

test('while other work keeps the loop busy, chunks are held back to their share', async () => {
  const turns = new Turns();
  turns.configure({ share: 0.1, burst_ms: 1 });
  let reading = true;
  // Other work: 4 ms of every turn of the event loop while the reader runs.
  const other = new Promise<void>((resolve) => {
    const tick = () => {
      if (!reading) return resolve();
      spin(4);
      setImmediate(tick);
    };
    setImmediate(tick);
  });
  const pacer = turns.pacer();
  for (let i = 0; i < 200; i++) {
    await pacer.next();
    spin(1);
  }
  pacer.end();
  reading = false;
  await other;
  assert.ok(turns.held > 0, 'some chunks waited for the bucket to refill');
  assert.ok(turns.work_ms >= 200, `the chunks' time is counted (${turns.work_ms} ms)`);
});

test("a reader whose signal aborts stops at its next turn; the other readers' turns go on", async () => {
  const turns = new Turns();
  const leaving = new AbortController();
  const order: string[] = [];
  const reader = async (name: string, signal?: AbortSignal) => {
    const pacer = turns.pacer(signal);
    try {
      for (let i = 0; i < 3; i++) {
        await pacer.next();
        order.push(`${name}${i}`);
        if (name === 'a' && i === 0) leaving.abort(new Error('client gone'));
      }
      return 'done';
    } catch (error) {
      return (error as Error).message;
    } finally {
      pacer.end();
    }
  };
  const [a, b] = await Promise.all([reader('a', leaving.signal), reader('b')]);
  assert.equal(a, 'client gone', "the reason is next()'s rejection");
  assert.equal(b, 'done');
  assert.deepEqual(order, ['a0', 'b0', 'b1', 'b2'], 'no chunk of a after its signal aborted');
  // Aborted before asking: refused at once, without waiting for a turn.
  await assert.rejects(turns.pacer(leaving.signal).next(), /client gone/);
});
