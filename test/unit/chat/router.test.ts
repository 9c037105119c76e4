import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CircuitBreaker } from '../../../gateway/llm/breaker.js';
import { Router, RoutingError } from '../../../gateway/llm/router.js';
import {
  UpstreamError,
  type Engine,
  type EngineRequest,
  type UpstreamChunk,
  type UpstreamCompletion,
  type UpstreamErrorKind,
} from '../../../gateway/llm/types.js';

function clock(start = 1_000_000) {
  const c = { ms: start, now: () => c.ms };
  return c;
}

test('breaker: opens after the threshold of consecutive failures, probes once after the cooldown', () => {
  const c = clock();
  const b = new CircuitBreaker({ failure_threshold: 3, cooldown_ms: 1_000 }, c.now);
  b.onFailure();
  b.onFailure();
  b.onSuccess(); // a success in between resets the count
  b.onFailure();
  b.onFailure();
  assert.equal(b.state, 'closed');
  assert.equal(b.tryAcquire(), true);
  b.onFailure();
  assert.equal(b.state, 'open');
  assert.equal(b.tryAcquire(), false);
  assert.equal(b.retryAfterMs(), 1_000);
  c.ms += 999;
  assert.equal(b.tryAcquire(), false);
  c.ms += 1;
  assert.equal(b.tryAcquire(), true, 'one probe after the cooldown');
  assert.equal(b.state, 'half_open');
  assert.equal(b.tryAcquire(), false, 'only one probe at a time');
  b.onFailure();
  assert.equal(b.state, 'open', 'a failed probe reopens at once');
  c.ms += 1_000;
  assert.equal(b.tryAcquire(), true);
  b.onSuccess();
  assert.equal(b.state, 'closed');
  assert.equal(b.tryAcquire(), true);
  assert.equal(b.tryAcquire(), true);
});

/** An engine that fails with the scripted kinds in order, then answers. */
class ScriptEngine implements Engine {
  readonly type = 'script';
  calls = 0;
  constructor(
    readonly label: string,
    private readonly failures: Array<UpstreamErrorKind | 'ok'> = [],
    private readonly fail_after_first_chunk = false,
  ) {}
  private next(): void {
    const kind = this.failures[this.calls++] ?? 'ok';
    if (kind !== 'ok')
      throw new UpstreamError(
        kind,
        `${this.label} ${kind}`,
        kind === 'rate_limited' ? 429 : kind === 'server' ? 500 : null,
      );
  }
  async complete(): Promise<UpstreamCompletion> {
    this.next();
    return {
      choices: [
        { index: 0, message: { role: 'assistant', content: this.label }, finish_reason: 'stop' },
      ],
      usage: { prompt_tokens: 1, completion_tokens: 1 },
    };
  }
  async *stream(): AsyncIterable<UpstreamChunk> {
    this.next();
    yield { choices: [{ index: 0, delta: { content: this.label } }] };
    if (this.fail_after_first_chunk) throw new UpstreamError('connection', 'broke mid-stream');
    yield { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] };
  }
  async close(): Promise<void> {}
}

function request(signal = new AbortController().signal): EngineRequest {
  return {
    params: {},
    messages: [{ role: 'user', content: 'hi' }],
    max_output_tokens: 10,
    prompt_tokens_estimate: 5,
    signal,
  };
}

function router(engines: Record<string, Engine>, threshold = 100, c = clock()) {
  return new Router(
    new Map(Object.entries(engines)),
    { failure_threshold: threshold, cooldown_ms: 10_000 },
    c.now,
  );
}

test('router fails over on connection errors, timeouts, 429, 5xx and misconfigured targets, in order', async () => {
  for (const kind of [
    'connection',
    'timeout',
    'rate_limited',
    'server',
    'misconfigured',
    'invalid_response',
  ] as const) {
    const a = new ScriptEngine('a', [kind]);
    const b = new ScriptEngine('b');
    const routed = await router({ a, b }).complete(['a', 'b'], request());
    assert.equal(routed.target, 'b', kind);
    assert.equal(routed.value.choices[0]!.message.content, 'b');
    assert.deepEqual(
      routed.attempts.map((x) => [x.target, x.outcome]),
      [
        ['a', kind],
        ['b', 'ok'],
      ],
    );
  }
});

test('router does not fail over when the upstream rejects the request itself (4xx), nor after the client left', async () => {
  const a = new ScriptEngine('a', ['rejected']);
  const b = new ScriptEngine('b');
  await assert.rejects(
    router({ a, b }).complete(['a', 'b'], request()),
    (e) => e instanceof UpstreamError && e.kind === 'rejected',
  );
  assert.equal(b.calls, 0);
  const gone = new AbortController();
  gone.abort();
  await assert.rejects(
    router({ a: new ScriptEngine('a'), b }).complete(['a', 'b'], request(gone.signal)),
    (e) => e instanceof UpstreamError && e.kind === 'aborted',
  );
  assert.equal(b.calls, 0);
});

test('router maps exhaustion to 504 after a timeout, 503 after 429 or open circuits, else 502', async () => {
  const cases: Array<[UpstreamErrorKind, number]> = [
    ['timeout', 504],
    ['rate_limited', 503],
    ['server', 502],
    ['connection', 502],
  ];
  for (const [kind, status] of cases) {
    const error = await router({ a: new ScriptEngine('a', [kind]) })
      .complete(['a'], request())
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(error instanceof RoutingError, kind);
    assert.equal(error.status, status, kind);
  }
});

test('router: an open circuit skips its target without calling it, and 503 carries Retry-After when all are open', async () => {
  const c = clock();
  const a = new ScriptEngine('a', ['server', 'server', 'server', 'server']);
  const b = new ScriptEngine('b');
  const r = router({ a, b }, 2, c);
  await r.complete(['a', 'b'], request());
  await r.complete(['a', 'b'], request());
  assert.equal(a.calls, 2);
  const third = await r.complete(['a', 'b'], request());
  assert.equal(a.calls, 2, 'the open circuit kept the request away from a');
  assert.deepEqual(
    third.attempts.map((x) => x.outcome),
    ['circuit_open', 'ok'],
  );
  const alone = await r.complete(['a'], request()).then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(alone instanceof RoutingError);
  assert.equal(alone.status, 503);
  assert.equal(alone.retry_after_s, 10);
  c.ms += 10_000;
  await r.complete(['a', 'b'], request()); // the probe fails (a's third scripted failure) and b answers
  assert.equal(a.calls, 3);
  assert.deepEqual(r.breakerStates(), { a: 'open', b: 'closed' });
});

test('router streams: failover before the first chunk, and the first chunk is handed over already read', async () => {
  const a = new ScriptEngine('a', ['server']);
  const b = new ScriptEngine('b');
  const routed = await router({ a, b }).stream(['a', 'b'], request());
  assert.equal(routed.target, 'b');
  assert.equal(routed.value.first?.choices?.[0]?.delta?.content, 'b');
  const rest: UpstreamChunk[] = [];
  for (let n = await routed.value.rest.next(); !n.done; n = await routed.value.rest.next())
    rest.push(n.value);
  assert.equal(rest.length, 1);
  assert.equal(rest[0]!.choices?.[0]?.finish_reason, 'stop');
});

test('router streams: a break after the first chunk is not retried (the client has bytes) but counts against the target', async () => {
  const a = new ScriptEngine('a', [], true);
  const b = new ScriptEngine('b');
  const r = router({ a, b }, 1);
  const routed = await r.stream(['a', 'b'], request());
  assert.equal(routed.target, 'a');
  await assert.rejects(
    routed.value.rest.next(),
    (e) => e instanceof UpstreamError && e.kind === 'connection',
  );
  assert.equal(b.calls, 0);
  assert.equal(r.breakerStates().a, 'open');
});

test('router tells its attempt observer of every attempt, circuit_open skips and non-retried failures included', async () => {
  const seen: Array<[string, string, number]> = [];
  const engines = new Map<string, Engine>([
    ['a', new ScriptEngine('a', ['server'])],
    ['b', new ScriptEngine('b')],
  ]);
  const r = new Router(
    engines,
    { failure_threshold: 1, cooldown_ms: 10_000 },
    clock().now,
    (target, outcome, seconds) => seen.push([target, outcome, seconds]),
  );
  await r.complete(['a', 'b'], request()); // a fails (its circuit opens), b answers
  await r.stream(['a', 'b'], request()); // a is skipped
  assert.deepEqual(
    seen.map(([target, outcome]) => [target, outcome]),
    [
      ['a', 'server'],
      ['b', 'ok'],
      ['a', 'circuit_open'],
      ['b', 'ok'],
    ],
  );
  assert.ok(seen.every(([, , seconds]) => seconds >= 0 && seconds < 5));
  assert.equal(seen[2]![2], 0, 'a skip takes no time');
  const rejecting = new Router(
    new Map<string, Engine>([
      ['a', new ScriptEngine('a', ['rejected'])],
      ['b', new ScriptEngine('b')],
    ]),
    { failure_threshold: 5, cooldown_ms: 1 },
    clock().now,
    (target, outcome) => seen.push([target, outcome, 0]),
  );
  seen.length = 0;
  await assert.rejects(rejecting.complete(['a', 'b'], request()));
  assert.deepEqual(
    seen.map(([target, outcome]) => [target, outcome]),
    [['a', 'rejected']],
    'reported although the error is not a RoutingError',
  );
});
