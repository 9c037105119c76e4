import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deploymentShare, RateLimiter } from '../../../gateway/kernel/rate-limit.ts';

const perMinute = (max: number) => ({ max, window_ms: 60_000, refill: 'steady' as const });

test('rate limit: a key may burst to its per-minute limit, then gets 429 with the seconds to wait', () => {
  const c = { ms: 0 };
  const limiter = new RateLimiter(perMinute(60), { now_ms: () => c.ms });
  for (let i = 0; i < 60; i++) assert.equal(limiter.take('k').ok, true, `request ${i}`);
  const refused = limiter.take('k');
  assert.equal(refused.ok, false);
  assert.equal(refused.retry_after_s, 1);
  assert.equal(limiter.take('other').ok, true, 'keys are limited separately');
  c.ms += 1_000;
  assert.equal(limiter.take('k').ok, true, 'one request per second refills');
  assert.equal(limiter.take('k').ok, false);
  c.ms += 60_000;
  for (let i = 0; i < 60; i++) assert.equal(limiter.take('k').ok, true);
  assert.equal(limiter.take('k').ok, false);
});

test('rate limit: Retry-After rounds up for slow limits', () => {
  const limiter = new RateLimiter(perMinute(2), { now_ms: () => 0 });
  limiter.take('k');
  limiter.take('k');
  assert.deepEqual(limiter.take('k'), { ok: false, retry_after_s: 30, remaining: 0 });
});

test('rate limit: the bucket table is bounded', () => {
  const c = { ms: 0 };
  const limiter = new RateLimiter(perMinute(10), { now_ms: () => c.ms, max_keys: 100 });
  for (let i = 0; i < 1_000; i++) limiter.take(`key-${i}`);
  assert.ok((limiter as unknown as { buckets: Map<string, unknown> }).buckets.size <= 100);
});

test('sliding rate limit (failures): allows max failures per window, then says how long to wait', () => {
  const limiter = new RateLimiter({ max: 3, window_ms: 60_000, refill: 'sliding' });
  const t0 = 1_000_000;
  for (let i = 0; i < 3; i++) {
    assert.equal(limiter.retryAfterSeconds('a', t0 + i), 0);
    limiter.record('a', t0 + i);
  }
  assert.equal(limiter.retryAfterSeconds('a', t0 + 10), 60);
  assert.equal(limiter.retryAfterSeconds('b', t0 + 10), 0, 'other keys are not affected');
  assert.equal(
    limiter.retryAfterSeconds('a', t0 + 60_001),
    0,
    'the oldest failure left the window',
  );
  limiter.record('a', t0 + 60_002);
  limiter.reset('a');
  assert.equal(limiter.retryAfterSeconds('a', t0 + 60_003), 0);
  const small = new RateLimiter({ max: 1, window_ms: 60_000, refill: 'sliding' }, { max_keys: 2 });
  small.record('x', t0);
  small.record('y', t0);
  small.record('z', t0);
  assert.equal(
    small.retryAfterSeconds('x', t0),
    0,
    'the map is bounded: the oldest key was evicted',
  );
  assert.ok(small.retryAfterSeconds('z', t0) > 0);
});

test('sliding rate limit (sign-ups): take counts allowed events only; max 0 turns the limit off', () => {
  const limiter = new RateLimiter({ max: 2, window_ms: 3_600_000, refill: 'sliding' });
  assert.equal(limiter.take('ip', 0).ok, true);
  assert.equal(limiter.take('ip', 1_000).ok, true);
  assert.deepEqual(limiter.take('ip', 2_000), { ok: false, retry_after_s: 3_598, remaining: 0 });
  assert.equal(limiter.take('ip', 3_600_000).ok, true, 'the first event left the window');
  assert.equal(limiter.take('ip', 3_600_500).ok, false, 'the second is still in it');
  const off = new RateLimiter({ max: 0, window_ms: 3_600_000, refill: 'sliding' });
  for (let i = 0; i < 1_000; i++) assert.equal(off.take('ip', i).ok, true);
  assert.throws(() => new RateLimiter({ max: 1.5, window_ms: 1, refill: 'steady' }), RangeError);
});

test('rate limit: setMax shares the limit out (fewer tokens, slower refill) and back', () => {
  const c = { ms: 0 };
  const limiter = new RateLimiter(perMinute(60), { now_ms: () => c.ms });
  limiter.setMax(30); // two gateways: each admits half
  assert.equal(limiter.max, 30);
  let admitted = 0;
  while (limiter.take('k').ok) admitted++;
  assert.equal(admitted, 30, 'a full bucket keeps only the new limit');
  c.ms += 2_000;
  assert.equal(limiter.take('k').ok, true, 'refills at 30 a minute: one in two seconds');
  assert.equal(limiter.take('k').ok, false);
  limiter.setMax(60); // alone again
  c.ms += 1_000;
  assert.equal(limiter.take('k').ok, true, 'one a second again');
  assert.equal(limiter.take('k').ok, false, 'spent tokens stay spent');
  assert.throws(() => limiter.setMax(1.5), RangeError);
});

test('a deployment-wide limit (failed logins) shared among gateways: each counts floor(limit / gateways), at least 1, and follows the count', () => {
  assert.deepEqual(
    [1, 2, 3, 5, 6, 40].map((n) => deploymentShare(5, n)),
    [5, 2, 1, 1, 1, 1],
  );
  assert.equal(deploymentShare(0, 3), 0, 'a limit turned off stays off');
  const live = { gateways: 2 };
  const failures = new RateLimiter(
    { max: 5, window_ms: 900_000, refill: 'sliding' },
    { shared_by: () => live.gateways },
  );
  for (let i = 0; i < 2; i++) {
    assert.equal(failures.retryAfterSeconds('a@example.com', i), 0, `failure ${i} allowed`);
    failures.record('a@example.com', i);
  }
  assert.ok(
    failures.retryAfterSeconds('a@example.com', 10) > 0,
    'two gateways: this one locks after its 2 of 5',
  );
  assert.equal(failures.max, 2);
  live.gateways = 1; // the other gateway left
  assert.equal(failures.retryAfterSeconds('a@example.com', 10), 0, 'alone: the whole 5 again');
  assert.equal(failures.max, 5);
  for (let i = 0; i < 3; i++) failures.record('a@example.com', 20 + i);
  assert.ok(failures.retryAfterSeconds('a@example.com', 30) > 0, 'locked after 5 in all');
});

test('claim: an attempt takes its slot before its outcome is known; release gives exactly that slot back', () => {
  const c = { ms: 1_000 };
  const failures = new RateLimiter(
    { max: 3, window_ms: 60_000, refill: 'sliding' },
    { now_ms: () => c.ms },
  );
  // Three attempts in flight at once take every slot: a fourth is refused before any outcome.
  const pending = [failures.claim('ip'), failures.claim('ip'), failures.claim('ip')];
  assert.ok(pending.every((slot) => slot.ok));
  const fourth = failures.claim('ip');
  assert.equal(fourth.ok, false);
  assert.equal(fourth.retry_after_s, 60);
  fourth.release(); // a refusal took nothing: nothing to give back
  assert.equal(failures.claim('ip').ok, false);
  // One turns out right: its slot comes back (once, however often release is called).
  c.ms += 10_000;
  pending[1]!.release();
  pending[1]!.release();
  assert.equal(failures.claim('ip').ok, true, 'the released slot');
  assert.equal(failures.claim('ip').ok, false, 'and no more');
  // The others stay counted until the window passes.
  c.ms += 50_000;
  assert.equal(failures.claim('ip').ok, true);
  // A steady bucket gives its token back the same way.
  const steady = new RateLimiter(perMinute(1), { now_ms: () => c.ms });
  const slot = steady.claim('k');
  assert.equal(steady.take('k').ok, false);
  slot.release();
  assert.equal(steady.take('k').ok, true);
});
