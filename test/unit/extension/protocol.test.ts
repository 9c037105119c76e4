import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ACTION_LABELS,
  MAX_MESSAGE_CHARS,
  formatMoney,
  parseFromWebview,
} from '../../../extension/chat/protocol.js';

test('well-formed webview messages are accepted as they are', () => {
  const messages = [
    { type: 'ready' },
    { type: 'send', text: 'hello' },
    { type: 'stop' },
    { type: 'newChat' },
    { type: 'selectModel', model: 'service-ai-pro-4' },
    { type: 'copy', text: 'const a = 1;' },
    { type: 'insert', text: '' },
    { type: 'insert', text: 'fn main() {}', language: 'rust' },
    { type: 'insert', text: 'int x;', language: 'c++' },
    { type: 'action', action: 'topUp' },
    { type: 'openLink', href: 'https://example.com/docs' },
  ];
  for (const message of messages) assert.deepEqual(parseFromWebview(message), message);
});

test('extra fields are not carried through', () => {
  assert.deepEqual(parseFromWebview({ type: 'send', text: 'hi', apiKey: 'sk-x' }), {
    type: 'send',
    text: 'hi',
  });
  assert.deepEqual(parseFromWebview({ type: 'copy', text: 'x', language: 'ts' }), {
    type: 'copy',
    text: 'x',
  });
  // An odd fence tag is dropped, the code is still inserted.
  assert.deepEqual(parseFromWebview({ type: 'insert', text: 'x', language: 'a b<script>' }), {
    type: 'insert',
    text: 'x',
  });
  assert.deepEqual(parseFromWebview({ type: 'insert', text: 'x', language: 'x'.repeat(41) }), {
    type: 'insert',
    text: 'x',
  });
});

test('malformed, unknown or dangerous messages are dropped', () => {
  const rejected: unknown[] = [
    null,
    'send',
    42,
    {},
    { type: 'unknown' },
    { type: 'send' },
    { type: 'send', text: '   ' },
    { type: 'send', text: 7 },
    { type: 'send', text: 'x'.repeat(MAX_MESSAGE_CHARS + 1) },
    { type: 'selectModel', model: 'a model; rm -rf' },
    { type: 'action', action: 'deleteEverything' },
    { type: 'action', action: 'toString' },
    { type: 'openLink', href: 'javascript:alert(1)' },
    { type: 'openLink', href: 'command:workbench.action.terminal.new' },
    { type: 'openLink', href: 'file:///etc/passwd' },
  ];
  for (const message of rejected)
    assert.equal(parseFromWebview(message), undefined, JSON.stringify(message)?.slice(0, 80));
});

test('every action has a label', () => {
  assert.deepEqual(Object.keys(ACTION_LABELS).sort(), [
    'addModelProvider',
    'openSettings',
    'selectModel',
    'setApiKey',
    'startLocalGateway',
    'topUp',
  ]);
});

test('money is shown with the currency sign and enough digits for tiny AI costs', () => {
  assert.equal(formatMoney(499.5, 'INR'), '₹499.50');
  assert.equal(formatMoney(0.000123, 'INR'), '₹0.000123');
  assert.equal(formatMoney(0, 'INR'), '₹0.00');
  assert.equal(formatMoney(12, 'USD'), '$12.00');
  assert.equal(formatMoney(3, 'EUR'), 'EUR 3.00');
});

test('the context, history and mention messages are accepted only well-formed', () => {
  assert.deepEqual(parseFromWebview({ type: 'toggleActive', include: false }), {
    type: 'toggleActive',
    include: false,
  });
  assert.deepEqual(parseFromWebview({ type: 'addFile' }), { type: 'addFile' });
  assert.deepEqual(parseFromWebview({ type: 'mention' }), { type: 'mention' });
  assert.deepEqual(parseFromWebview({ type: 'showHistory' }), { type: 'showHistory' });
  assert.deepEqual(parseFromWebview({ type: 'removeContext', id: 'file-3' }), {
    type: 'removeContext',
    id: 'file-3',
  });
  assert.deepEqual(
    parseFromWebview({ type: 'openConversation', id: '0b7c2e9e-1d7a-4c5e-9c1e-5b0f6f1d2a3b' }),
    { type: 'openConversation', id: '0b7c2e9e-1d7a-4c5e-9c1e-5b0f6f1d2a3b' },
  );
  for (const bad of [
    { type: 'toggleActive', include: 'yes' },
    { type: 'removeContext', id: '../../etc/passwd' },
    { type: 'renameConversation', id: 'a b' },
    { type: 'deleteConversation', id: 'x'.repeat(101) },
    { type: 'openConversation' },
  ]) {
    assert.equal(parseFromWebview(bad), undefined, JSON.stringify(bad));
  }
});
