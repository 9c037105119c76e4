// The PostgreSQL store's outage log (issue #36) and what its refusals tell clients: one line
// as an outage starts, one per interval while it lasts, one as it ends (once no failure came
// for a second) with its counts; "nothing was changed" only when the gateway knows it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Outage, OUTAGE_SETTLE_MS } from '../../../gateway/store/pg/outage.ts';
import { refusedByServer } from '../../../gateway/store/pg/pool.ts';
import { storeUnavailable } from '../../../gateway/http/errors.ts';
import { StoreOutcomeUnknownError, StoreUnavailableError } from '../../../gateway/kernel/errors.ts';
import { inRequestScope, requestScope } from '../../../gateway/kernel/request-scope.ts';

test('an outage is logged once as it starts, once per interval, once as it ends with its counts', () => {
  let now = 1_000_000;
  const lines: Array<Record<string, unknown>> = [];
  const outage = new Outage(
    (msg, fields) => lines.push({ msg, ...fields }),
    10_000,
    () => now,
  );
  outage.served(); // nothing in course: nothing said
  for (let i = 0; i < 25_000; i++) {
    outage.failed(new Error('connect ECONNREFUSED'), 1);
    now += 1; // 25 s of refusals, one a millisecond
  }
  // A statement that succeeds between failures (a server shutting down) does not end it.
  outage.served();
  outage.failed(new Error('terminating connection'), 1);
  now += 100;
  outage.served();
  assert.equal(outage.down, true, 'ended only once no failure came for a second');
  now += OUTAGE_SETTLE_MS;
  outage.served();
  assert.equal(outage.down, false);
  const events = lines.map((line) => line.event);
  assert.deepEqual(events, [
    'store_outage_started',
    'store_outage_continues',
    'store_outage_continues',
    'store_outage_ended',
  ]);
  const ended = lines.at(-1)!;
  assert.equal(ended.refused, 25_001);
  assert.equal(
    ended.duration_ms,
    25_000 + 100,
    'from the first failure to the first success after the last',
  );
  assert.deepEqual(outage.totals, { outages: 1, refused: 25_001 });
});

test('a statement the server refused with an ERROR was not applied; a connection that ended leaves it in doubt', () => {
  assert.equal(refusedByServer({ code: '57014', severity: 'ERROR' }), true, 'statement timeout');
  assert.equal(refusedByServer({ code: '23505', severity: 'ERROR' }), true);
  assert.equal(refusedByServer({ code: '57P01', severity: 'FATAL' }), false, 'admin shutdown');
  assert.equal(refusedByServer({ code: '08006', severity: 'ERROR' }), false);
  assert.equal(refusedByServer({ code: 'XX000', severity: 'PANIC' }), false);
  assert.equal(refusedByServer(new Error('Connection terminated unexpectedly')), false);
  assert.equal(refusedByServer(undefined), false);
});

test('"nothing was changed" only when the request committed nothing before; store_outcome_unknown otherwise says so', () => {
  const unchanged = inRequestScope(() => storeUnavailable(new StoreUnavailableError('down')));
  assert.equal(unchanged.code, 'store_unavailable');
  assert.match(unchanged.message, /nothing was changed/);

  const partly = inRequestScope(() => {
    requestScope()!.committed++; // a recharge's hold committed, its settlement refused
    return storeUnavailable(new StoreUnavailableError('down'));
  });
  assert.equal(partly.code, 'store_unavailable');
  assert.doesNotMatch(partly.message, /nothing was changed/);
  assert.match(partly.message, /not completed/);

  // Outside any request (background work), it is not known either.
  assert.doesNotMatch(
    storeUnavailable(new StoreUnavailableError('down')).message,
    /nothing was changed/,
  );

  const unknown = inRequestScope(() => storeUnavailable(new StoreOutcomeUnknownError('lost')));
  assert.equal(unknown.status, 503);
  assert.equal(unknown.code, 'store_outcome_unknown');
  assert.match(unknown.message, /outcome is unknown/);
  assert.match(unknown.message, /same idempotency key/);
  assert.doesNotMatch(unknown.message, /nothing was changed/);
  assert.equal(unknown.headers['retry-after'], '1');
});
