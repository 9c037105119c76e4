import assert from 'node:assert/strict';
import { test } from 'node:test';
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { AIHubError, advise, toFailure, type GatewayFailure } from '../../../extension/errors.js';
import { topUpAddress } from '../../../extension/topUpUrl.js';

const local = { apiBase: 'http://127.0.0.1:8787/v1', isLocal: true };
const remote = { apiBase: 'https://gw.example.com/v1', isLocal: false };

function httpError(
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
) {
  return APIError.generate(
    status,
    { error: { message, type: 'x', param: null, code } },
    undefined,
    new Headers(headers),
  );
}

test('401 from the SDK becomes "Set API Key"', () => {
  const failure = toFailure(httpError(401, 'invalid_api_key', 'Invalid API key'));
  assert.deepEqual(failure, {
    kind: 'http',
    status: 401,
    code: 'invalid_api_key',
    message: 'Invalid API key',
    retryAfterSeconds: undefined,
  });
  const advice = advise(failure, local)!;
  assert.deepEqual(advice.actions, ['setApiKey']);
  assert.match(advice.message, /Invalid API key/);
});

test('402 becomes "Top Up", and the gateway message (with its wallet URL) is shown', () => {
  const advice = advise(
    toFailure(httpError(402, 'insufficient_balance', 'Top up at http://127.0.0.1:8787/wallet')),
    local,
  )!;
  assert.deepEqual(advice.actions, ['topUp']);
  assert.match(advice.message, /\/wallet/);
});

test('402 carries the top-up page the gateway named, with its shortfall, to the Top Up action', () => {
  const named = 'http://gw.internal:8787/wallet?amount=1.25';
  const failure = toFailure(
    httpError(402, 'insufficient_balance', `top up at ${named} (the wallet is 1.2481 INR short)`, {
      'x-aihub-topup-url': named,
    }),
  );
  assert.equal(failure.kind === 'http' && failure.topUpUrl, named);
  const advice = advise(failure, remote)!;
  assert.deepEqual(advice.actions, ['topUp']);
  assert.equal(advice.topUpUrl, named);
  // A key's own limit is no wallet shortfall: no top-up page.
  const limit = advise(
    toFailure(httpError(402, 'key_limit_exceeded', 'limit', { 'x-aihub-topup-url': named })),
    remote,
  )!;
  assert.equal(limit.topUpUrl, undefined);
});

test('Top Up opens <base URL>/wallet with the shortfall the gateway named, and nothing else', () => {
  const root = 'https://gw.example.com';
  assert.equal(topUpAddress(root), `${root}/wallet`);
  // The host the gateway names may be one only it knows: the base URL the extension uses wins.
  assert.equal(
    topUpAddress(root, 'http://0.0.0.0:8787/wallet?amount=1.25'),
    `${root}/wallet?amount=1.25`,
  );
  assert.equal(topUpAddress(root, 'http://x/wallet?amount=300'), `${root}/wallet?amount=300`);
  for (const bad of [
    'http://x/wallet?amount=-1',
    'http://x/wallet?amount=0',
    'http://x/wallet?amount=1e9',
    'http://x/wallet?amount=1.234',
    'http://x/wallet?amount=1%26next%3Devil',
    'http://x/wallet',
    'not a url',
  ])
    assert.equal(topUpAddress(root, bad), `${root}/wallet`, bad);
});

test('an unreachable gateway becomes "Start Local Gateway" (plus settings when remote)', () => {
  const error = new APIConnectionError({
    cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
  });
  const failure = toFailure(error);
  assert.deepEqual(failure, { kind: 'unreachable', message: 'ECONNREFUSED' });
  assert.deepEqual(advise(failure, local)!.actions, ['startLocalGateway']);
  assert.deepEqual(advise(failure, remote)!.actions, ['startLocalGateway', 'openSettings']);
  assert.match(advise(failure, remote)!.message, /gw\.example\.com/);
});

test('a missing key offers the local gateway only when the base URL is local', () => {
  const failure = toFailure(new AIHubError({ kind: 'missingKey' }));
  assert.deepEqual(advise(failure, local)!.actions, ['startLocalGateway', 'setApiKey']);
  assert.deepEqual(advise(failure, remote)!.actions, ['setApiKey']);
});

test('cancellation is not an error to report', () => {
  assert.equal(advise(toFailure(new APIUserAbortError()), local), undefined);
  const abort = Object.assign(new Error('aborted'), { name: 'AbortError' });
  assert.equal(advise(toFailure(abort), local), undefined);
});

test('other statuses map to the action that helps', () => {
  const cases: Array<[GatewayFailure, string[]]> = [
    [toFailure(httpError(404, 'model_not_found', 'no such model')), ['selectModel']],
    [toFailure(httpError(404, 'not_found', 'no route')), ['openSettings']],
    [toFailure(httpError(403, 'account_disabled', 'disabled')), ['setApiKey']],
    [toFailure(httpError(503, 'no_upstream', 'none available')), []],
    [toFailure(new APIConnectionTimeoutError()), ['openSettings']],
    [{ kind: 'badBaseUrl', message: 'not a URL' }, ['openSettings']],
  ];
  for (const [failure, actions] of cases)
    assert.deepEqual(advise(failure, local)!.actions, actions, JSON.stringify(failure));
});

test('429 tells when to retry', () => {
  const advice = advise(
    toFailure(httpError(429, 'rate_limit_exceeded', 'Slow down', { 'retry-after': '7' })),
    local,
  )!;
  assert.match(advice.message, /7 s/);
});
