import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runChain, type Attempt } from '../../../gateway/providers/chain.ts';
import { httpProviderSchema, sandboxProviderSchema } from '../../../gateway/providers/config.ts';
import { HttpProvider } from '../../../gateway/providers/http/adapter.ts';
import { SandboxProvider } from '../../../gateway/providers/sandbox/adapter.ts';
import type { PaymentProvider, ProviderRequest } from '../../../gateway/providers/types.ts';
import { json, startUpstream } from '../../support/payments-upstream.ts';

const request = (subject: string, submitted_at = new Date().toISOString()): ProviderRequest => ({
  txn_id: 'txn_0123456789abcdef01234567',
  service: 'recharge',
  amount_micros: 149_500_000,
  subject,
  params: { operator_id: 2, operator_type: 'prepaid' },
  submitted_at,
});

const sandbox = (name: string, extra: object = {}) =>
  new SandboxProvider(
    sandboxProviderSchema.parse({ type: 'sandbox', name, timeout_ms: 150, ...extra }),
    () => new Date(),
  );

async function chain(providers: PaymentProvider[], subject: string) {
  const attempts: Attempt[] = [];
  const result = await runChain(providers, request(subject), {
    now: () => new Date(),
    beforeAttempt: async (attempt) => {
      attempts.push(attempt);
    },
    afterAttempt: () => {},
  });
  return { result, attempts };
}

test('sandbox chain: each row of the table', async () => {
  const pair = [sandbox('a', { hang_on: ['0004'] }), sandbox('b')];
  const ok = await chain(pair, '9876543210');
  assert.equal(ok.result.result?.outcome, 'success');
  assert.equal(ok.result.provider, 'a');
  assert.equal(ok.attempts.length, 1);

  const declined = await chain(pair, '9876540001');
  assert.equal(declined.result.result?.outcome, 'failed');
  assert.equal(declined.attempts.length, 1, 'a decline never fails over');

  const pending = await chain(pair, '9876540002');
  assert.equal(pending.result.result?.outcome, 'pending');

  const timeout = await chain(pair, '9876540004');
  assert.equal(timeout.result.provider, 'b');
  assert.equal(timeout.result.result?.outcome, 'success');
  assert.deepEqual(
    timeout.attempts.map((a) => [a.provider, a.outcome, a.error_kind]),
    [
      ['a', 'unavailable', 'timeout'],
      ['b', 'success', undefined],
    ],
  );

  const all_fail = await chain(pair, '9876540005');
  assert.equal(all_fail.result.result, null);
  assert.deepEqual(
    all_fail.attempts.map((a) => a.error_kind),
    ['http_5xx', 'http_5xx'],
  );
});

test('sandbox status: pending settles after pending_ms, to success (0002) or failure (0003)', async () => {
  let now = new Date('2025-01-01T00:00:00Z');
  const provider = new SandboxProvider(
    sandboxProviderSchema.parse({ type: 'sandbox', name: 's', pending_ms: 1_000 }),
    () => now,
  );
  const signal = new AbortController().signal;
  const at = now.toISOString();
  assert.equal(
    (await provider.status({ ...request('9876540002', at), provider_ref: 'x' }, signal)).outcome,
    'pending',
  );
  now = new Date(now.getTime() + 1_000);
  assert.equal(
    (await provider.status({ ...request('9876540002', at), provider_ref: 'x' }, signal)).outcome,
    'success',
  );
  assert.equal(
    (await provider.status({ ...request('9876540003', at), provider_ref: 'x' }, signal)).outcome,
    'failed',
  );
});

test('a provider that times out but took the transaction is not failed over (no double payment)', async () => {
  const slow: PaymentProvider = {
    name: 'slow',
    timeout_ms: 50,
    submit: (_r, signal) =>
      new Promise((_, reject) =>
        signal.addEventListener('abort', () => reject(new Error('aborted'))),
      ),
    status: async () => ({ outcome: 'pending', provider_ref: 'slow-1', message: 'processing' }),
  };
  const second = sandbox('second');
  const { result, attempts } = await chain([slow, second], '9876543210');
  assert.equal(result.provider, 'slow');
  assert.equal(result.result?.outcome, 'pending');
  assert.equal(attempts.length, 1);
});

function httpConfig(url: string, extra: object = {}) {
  return httpProviderSchema.parse({
    type: 'http',
    name: 'agg',
    timeout_ms: 300,
    submit: {
      url: `${url}/recharge`,
      fields: {
        'txn.ref': 'txn_id',
        amount: 'amount',
        mobile: 'subject',
        op: 'param:operator_id',
        channel: 'const:api',
      },
    },
    status: { url: `${url}/status/{txn_id}`, method: 'GET', fields: { ref: 'provider_ref' } },
    auth: { header: 'X-Agg-Key', value_env: 'AGG_KEY', prefix: 'Key ' },
    codes: { operator_id: { '2': 'JIO' } },
    response: {
      status_field: 'data.state',
      ref_field: 'data.ref',
      message_field: 'msg',
      data_fields: { operator_ref: 'data.opref' },
    },
    status_map: {
      success: ['SUCCESS'],
      pending: ['PROCESSING'],
      failed: ['FAILED'],
      not_found: ['NOT_FOUND'],
    },
    ...extra,
  });
}

test('HTTP adapter: request mapping, auth from the environment, response and status mapping', async () => {
  const upstream = await startUpstream((req, res) => {
    if (req.url.startsWith('/status/'))
      return json(res, 200, { data: { state: 'success', ref: 'R1', opref: 'OP9' } });
    json(res, 200, { data: { state: 'PROCESSING', ref: 'R1' }, msg: 'queued' });
  });
  try {
    const provider = new HttpProvider(httpConfig(upstream.url), { AGG_KEY: 'k-123' });
    const signal = new AbortController().signal;
    const submitted = await provider.submit(request('9876543210'), signal);
    assert.deepEqual(submitted, { outcome: 'pending', provider_ref: 'R1', message: 'queued' });
    const sent = upstream.seen[0]!;
    assert.equal(sent.headers['x-agg-key'], 'Key k-123');
    assert.deepEqual(sent.json, {
      txn: { ref: 'txn_0123456789abcdef01234567' },
      amount: 149.5,
      mobile: '9876543210',
      op: 'JIO',
      channel: 'api',
    });
    const status = await provider.status({ ...request('9876543210'), provider_ref: 'R1' }, signal);
    assert.deepEqual(status, {
      outcome: 'success',
      provider_ref: 'R1',
      message: 'success',
      data: { operator_ref: 'OP9' },
    });
    assert.equal(upstream.seen[1]!.url, '/status/txn_0123456789abcdef01234567?ref=R1');
  } finally {
    await upstream.close();
  }
});

test('HTTP adapter: 5xx, 429, timeouts, refused requests and oversized answers are "unavailable"; a stated decline is final; unknown statuses are pending', async () => {
  const answers: Array<(res: import('node:http').ServerResponse) => void> = [
    (res) => json(res, 503, { error: 'down' }),
    (res) => json(res, 429, {}),
    () => {}, // never answers: timeout
    (res) => json(res, 401, { data: { state: 'AUTH' } }),
    (res) => json(res, 200, { data: { state: 'x'.repeat(70_000) } }),
    (res) => json(res, 400, { data: { state: 'FAILED' }, msg: 'invalid number' }),
    (res) => json(res, 200, { data: { state: 'ON_HOLD' } }),
    (res) => json(res, 200, { nothing: true }),
  ];
  const upstream = await startUpstream((_req, res, index) => answers[index]!(res));
  try {
    const provider = new HttpProvider(httpConfig(upstream.url), { AGG_KEY: 'k' });
    const kinds = [];
    for (let i = 0; i < 5; i++) {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 300);
      kinds.push(
        await provider.submit(request('9876543210'), controller.signal).then(
          () => 'answered',
          (error: { kind?: string }) => error.kind,
        ),
      );
      clearTimeout(timer);
    }
    assert.deepEqual(kinds, [
      'http_5xx',
      'rate_limited',
      'timeout',
      'bad_response',
      'bad_response',
    ]);
    const signal = new AbortController().signal;
    assert.deepEqual(await provider.submit(request('9876543210'), signal), {
      outcome: 'failed',
      provider_ref: null,
      message: 'invalid number',
      code: 'declined',
    });
    assert.equal((await provider.submit(request('9876543210'), signal)).outcome, 'pending');
    await assert.rejects(provider.submit(request('9876543210'), signal), { kind: 'bad_response' });
    const unconfigured = new HttpProvider(httpConfig(upstream.url), {});
    await assert.rejects(unconfigured.submit(request('9876543210'), signal), {
      kind: 'misconfigured',
    });
  } finally {
    await upstream.close();
  }
});

test('HTTP chain: the first aggregator fails with 502, the second one is used and both attempts are recorded', async () => {
  const down = await startUpstream((_req, res) => json(res, 502, {}));
  const up = await startUpstream((_req, res) =>
    json(res, 200, { data: { state: 'SUCCESS', ref: 'B-1' } }),
  );
  try {
    const first = new HttpProvider({ ...httpConfig(down.url), name: 'first' }, { AGG_KEY: 'k' });
    const second = new HttpProvider({ ...httpConfig(up.url), name: 'second' }, { AGG_KEY: 'k' });
    const { result, attempts } = await chain([first, second], '9876543210');
    assert.equal(result.provider, 'second');
    assert.equal(result.result?.outcome, 'success');
    assert.deepEqual(
      attempts.map((a) => [a.provider, a.outcome]),
      [
        ['first', 'unavailable'],
        ['second', 'success'],
      ],
    );
  } finally {
    await down.close();
    await up.close();
  }
});
