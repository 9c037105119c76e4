// FastHistogram (gateway/telemetry/histogram.ts) in place of prom-client's Histogram on the hot
// path: the same observations give /metrics the same text, byte for byte.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Histogram, Registry } from 'prom-client';
import { FastHistogram } from '../../../gateway/telemetry/histogram.js';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60];

function pair() {
  const theirs = new Registry();
  const ours = new Registry();
  const reference = new Histogram({
    name: 'aihub_x_seconds',
    help: 'a "help" text with \\ and\nnew line',
    labelNames: ['surface', 'target'] as const,
    buckets: BUCKETS,
    registers: [theirs],
  });
  const fast = new FastHistogram(
    'aihub_x_seconds',
    'a "help" text with \\ and\nnew line',
    ['surface', 'target'],
    BUCKETS,
    ours,
  );
  return { theirs, ours, reference, fast };
}

test('the same observations read the same at a scrape: bounds, values on a bound, past the last, label escaping', async () => {
  const { theirs, ours, reference, fast } = pair();
  assert.equal(await ours.metrics(), await theirs.metrics(), 'nothing observed: the same');
  const labels = [
    { surface: 'v1', target: 'a' },
    { surface: 'api', target: 'quote " back\\slash\nline' },
    { surface: 'v1', target: 'b' },
  ];
  const values = [0, 0.0005, 0.0004999, 0.00051, 0.001, 0.3, 1, 59.9, 60, 61, 1e9, 0.1 + 0.2];
  let i = 0;
  for (const value of values)
    for (const set of labels) {
      if (++i % 5 === 0) continue; // not every series gets every value
      reference.observe(set, value);
      fast.series(set).observe(value);
    }
  assert.equal(await ours.metrics(), await theirs.metrics());
  assert.deepEqual(await ours.getMetricsAsJSON(), await theirs.getMetricsAsJSON());
});

test('a series made before any observation is scraped at zero, as prom-client zero() makes it', async () => {
  const { theirs, ours, reference, fast } = pair();
  reference.zero({ surface: 'v1', target: 'a' });
  const series = fast.series({ surface: 'v1', target: 'a' });
  assert.equal(await ours.metrics(), await theirs.metrics());
  reference.observe({ surface: 'v1', target: 'a' }, 0.002);
  series.observe(0.002);
  assert.equal(fast.series({ surface: 'v1', target: 'a' }), series, 'one series per label set');
  assert.equal(await ours.metrics(), await theirs.metrics());
});

test('a value that is not a finite number is refused, as prom-client refuses it', () => {
  const { reference, fast } = pair();
  for (const value of [NaN, Infinity, -Infinity]) {
    assert.throws(() => reference.observe({ surface: 'v1', target: 'a' }, value), TypeError);
    assert.throws(() => fast.series({ surface: 'v1', target: 'a' }).observe(value), TypeError);
  }
});

test("the registry's reset zeroes every series and the ones callers hold go on counting", async () => {
  const { ours, fast } = pair();
  const series = fast.series({ surface: 'v1', target: 'a' });
  series.observe(1);
  ours.resetMetrics();
  assert.match(await ours.metrics(), /aihub_x_seconds_count\{surface="v1",target="a"\} 0/);
  series.observe(2);
  assert.match(await ours.metrics(), /aihub_x_seconds_count\{surface="v1",target="a"\} 1/);
  assert.match(await ours.metrics(), /aihub_x_seconds_sum\{surface="v1",target="a"\} 2/);
});
