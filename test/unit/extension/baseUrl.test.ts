import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isLoopbackUrl, normalizeBaseUrl } from '../../../extension/baseUrl.js';

function ok(input: string) {
  const result = normalizeBaseUrl(input);
  assert.ok(result.ok, `expected ${input} to be accepted, got ${JSON.stringify(result)}`);
  return result;
}

test('a correct base URL is kept as it is, without notes', () => {
  const result = ok('http://127.0.0.1:8787/v1');
  assert.equal(result.apiBase, 'http://127.0.0.1:8787/v1');
  assert.equal(result.root, 'http://127.0.0.1:8787');
  assert.deepEqual(result.notes, []);
});

test('a missing /v1 is added and the gateway root is the URL given', () => {
  const result = ok('https://gateway.example.com');
  assert.equal(result.apiBase, 'https://gateway.example.com/v1');
  assert.equal(result.root, 'https://gateway.example.com');
  assert.match(result.notes.join(' '), /\/v1/);
});

test('a full endpoint path is cut back to the base', () => {
  for (const endpoint of [
    '/v1/chat/completions',
    '/v1/models',
    '/v1/balance',
    '/v1/chat/completions/',
  ]) {
    const result = ok(`https://gw.example.com${endpoint}`);
    assert.equal(result.apiBase, 'https://gw.example.com/v1', endpoint);
    assert.ok(result.notes.length > 0, endpoint);
  }
});

test('a gateway behind a path prefix keeps the prefix, and its root too', () => {
  const result = ok('https://example.com/aihub/v1/');
  assert.equal(result.apiBase, 'https://example.com/aihub/v1');
  assert.equal(result.root, 'https://example.com/aihub');
  assert.equal(ok('https://example.com/aihub').apiBase, 'https://example.com/aihub/v1');
});

test('without a scheme: http for loopback, https otherwise', () => {
  assert.equal(ok('localhost:8787').apiBase, 'http://localhost:8787/v1');
  assert.equal(ok('127.0.0.1:9000/v1').apiBase, 'http://127.0.0.1:9000/v1');
  assert.equal(ok('gw.example.com/v1').apiBase, 'https://gw.example.com/v1');
});

test('trailing slashes, whitespace, query and fragment are cleaned', () => {
  const result = ok('  http://127.0.0.1:8787/v1///?x=1#top ');
  assert.equal(result.apiBase, 'http://127.0.0.1:8787/v1');
  assert.ok(result.notes.some((n) => /query/.test(n)));
});

test('mistakes that cannot be corrected are explained', () => {
  for (const [input, reason] of [
    ['', /empty/],
    ['ftp://example.com/v1', /http/],
    ['http://user:secret@example.com/v1', /credentials/],
    ['not a url at all', /not a URL/],
  ] as const) {
    const result = normalizeBaseUrl(input);
    assert.equal(result.ok, false, input);
    if (!result.ok) assert.match(result.problem, reason, input);
  }
});

test('loopback detection', () => {
  assert.equal(isLoopbackUrl('http://127.0.0.1:8787/v1'), true);
  assert.equal(isLoopbackUrl('http://localhost/v1'), true);
  assert.equal(isLoopbackUrl('https://gw.example.com/v1'), false);
});
