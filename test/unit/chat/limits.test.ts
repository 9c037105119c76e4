import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RateLimiter } from '../../../gateway/chat/limits.js';

test('rate limit: a key may burst to its per-minute limit, then gets 429 with the seconds to wait', () => {
  const c = { ms: 0 };
  const limiter = new RateLimiter(60, () => c.ms);
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
  const limiter = new RateLimiter(2, () => 0);
  limiter.take('k');
  limiter.take('k');
  assert.deepEqual(limiter.take('k'), { ok: false, retry_after_s: 30, remaining: 0 });
});

test('rate limit: the bucket table is bounded', () => {
  const c = { ms: 0 };
  const limiter = new RateLimiter(10, () => c.ms, 100);
  for (let i = 0; i < 1_000; i++) limiter.take(`key-${i}`);
  assert.ok((limiter as unknown as { buckets: Map<string, unknown> }).buckets.size <= 100);
});
