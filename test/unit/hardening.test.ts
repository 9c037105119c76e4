// Issue #13 at the module level: the JSON depth scan, guarded listeners, the audit listener
// with a body no edge bounded, and prototype names in the store (live, replayed, checkpointed).
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import type { Request, Response } from 'express';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from '../../gateway/http/json-depth.ts';
import { assertWellFormedPath } from '../../gateway/http/path.ts';
import { guarded } from '../../gateway/util/guard.ts';
import { auditMiddleware } from '../../gateway/payments/logs.ts';
import { createLogger } from '../../gateway/log.ts';
import { loadState, Store } from '../../gateway/store/store.ts';
import { table } from '../../gateway/store/state.ts';
import { FUNDING_TOPUP, balanceMicros, creditWallet } from '../../gateway/ledger/ledger.ts';
import { verifyDataDir } from '../../gateway/store/verify.ts';
import { tempDir } from '../support/temp.ts';

const bytes = (text: string) => Buffer.from(text);
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const PROTOTYPE_NAMES = [
  'constructor',
  '__proto__',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
];

test('JSON depth: counted on the bytes, up to the bound inclusive, strings and escapes skipped', () => {
  assert.equal(jsonDepthExceeds(bytes(nested(MAX_JSON_DEPTH))), false);
  assert.equal(jsonDepthExceeds(bytes(nested(MAX_JSON_DEPTH + 1))), true);
  assert.equal(
    jsonDepthExceeds(bytes(`{"a":${nested(10)},"b":{"c":${nested(MAX_JSON_DEPTH - 1)}}}`)),
    true,
    'the deepest branch counts',
  );
  assert.equal(
    jsonDepthExceeds(bytes(`{"a":${nested(40)},"b":${nested(40)}}`)),
    false,
    'siblings do not add up',
  );
  assert.equal(
    jsonDepthExceeds(bytes(JSON.stringify({ s: '['.repeat(1_000) }))),
    false,
    'brackets in a string',
  );
  assert.equal(
    jsonDepthExceeds(bytes(JSON.stringify({ s: 'a\\"[[[[' + '['.repeat(100) }))),
    false,
    'an escaped quote does not end the string',
  );
  assert.equal(
    jsonDepthExceeds(bytes(JSON.stringify({ s: 'ü€😀"[' }))),
    false,
    'multi-byte characters',
  );
  assert.equal(
    jsonDepthExceeds(bytes(`["\\\\",${nested(MAX_JSON_DEPTH)}]`)),
    true,
    'an escaped backslash ends before the quote',
  );
  assert.equal(jsonDepthExceeds(bytes('')), false);
  assert.equal(jsonDepthExceeds(bytes(nested(3)), 2), true);
});

test('path escapes: well-formed ones pass, a malformed one is a 400 invalid_path', () => {
  for (const path of ['/v1/models/service-ai-lite', '/api/x%20y', '/a/%E0%A4%A4', '/a%2Fb', '/'])
    assert.doesNotThrow(() => assertWellFormedPath(path));
  for (const path of ['/v1/models/%E0%A4%A', '/%', '/%zz', '/%C0%AF', '/%FF']) {
    assert.throws(
      () => assertWellFormedPath(path),
      (error: { status?: number; code?: string }) =>
        error.status === 400 && error.code === 'invalid_path',
      path,
    );
  }
});

test('a guarded listener reports what it throws and returns; a throwing reporter is swallowed too', () => {
  const seen: unknown[] = [];
  const listener = guarded(
    (error) => seen.push(error),
    (n: number) => {
      if (n > 1) throw new RangeError(`too big: ${n}`);
    },
  );
  listener(1);
  listener(2);
  assert.equal(seen.length, 1);
  assert.match(String(seen[0]), /too big: 2/);
  const worst = guarded(
    () => {
      throw new Error('the logger failed');
    },
    () => {
      throw new Error('the listener failed');
    },
  );
  assert.doesNotThrow(() => worst());
});

test('the audit listener with a 6,000-level body (past any edge) neither throws nor leaves the store ahead of its journal', async () => {
  const data_dir = tempDir('aihub-hardening-');
  const store = await Store.open(data_dir);
  const logged: string[] = [];
  const logger = createLogger('error', { write: (line: string) => void logged.push(line) });
  let deep: unknown = [];
  for (let i = 0; i < 6_000; i++) deep = [deep];
  const req = {
    method: 'POST',
    originalUrl: '/admin/accounts',
    body: { email: deep },
    ip: '127.0.0.1',
    socket: { remoteAddress: '127.0.0.1' },
  } as unknown as Request;
  const res = Object.assign(new EventEmitter(), {
    locals: { request_id: 'req_1' },
    statusCode: 400,
  }) as unknown as Response;
  let nexted = false;
  auditMiddleware(store, logger)(req, res, () => (nexted = true));
  assert.equal(nexted, true);
  const seq_before = store.state.seq;
  assert.doesNotThrow(() => res.emit('finish'));
  // The audit record was written (its details bounded) or its failure reported; either way
  // the process goes on and the store's memory matches its journal.
  await store.transact((tx) =>
    creditWallet(tx, { account_id: 'a', amount_micros: 1, from: FUNDING_TOPUP, memo: 'after' }),
  );
  assert.ok(store.state.seq <= seq_before + 2);
  await store.close();
  assert.equal((await verifyDataDir(data_dir)).ok, true);
});

test('a transaction whose journal line cannot be serialized is rolled back, not half-applied', async () => {
  const data_dir = tempDir('aihub-hardening-');
  const store = await Store.open(data_dir);
  let deep: unknown = [];
  for (let i = 0; i < 20_000; i++) deep = [deep];
  const seq = store.state.seq;
  await assert.rejects(
    store.transact((tx) => {
      creditWallet(tx, { account_id: 'a', amount_micros: 5, from: FUNDING_TOPUP, memo: 'with it' });
      tx.history({ type: 'note', ts: tx.now.toISOString(), deep });
    }),
    RangeError,
  );
  assert.equal(store.state.seq, seq);
  assert.equal(balanceMicros(store.state, 'a'), 0);
  await store.transact((tx) =>
    creditWallet(tx, { account_id: 'a', amount_micros: 7, from: FUNDING_TOPUP, memo: 'next' }),
  );
  await store.close();
  const reopened = await loadState(data_dir, { repair: false, now: () => new Date() });
  assert.equal(balanceMicros(reopened.state, 'a'), 7);
  assert.equal((await verifyDataDir(data_dir)).ok, true);
});

test('prototype names as ids: never found, stored as plain rows, and replay and checkpoint give the live state', async () => {
  const data_dir = tempDir('aihub-hardening-');
  const store = await Store.open(data_dir, { checkpoint_every_records: 1_000_000 });
  for (const name of PROTOTYPE_NAMES) {
    assert.equal(store.get('accounts', name), undefined, `get ${name} on an empty table`);
    assert.equal(store.get('idempotency', name), undefined);
    await store.transact((tx) => assert.equal(tx.get('emails', name), undefined));
  }
  await store.transact((tx) => {
    for (const name of PROTOTYPE_NAMES) tx.set('emails', name, `acc_${name}`);
  });
  for (const name of PROTOTYPE_NAMES) assert.equal(store.get('emails', name), `acc_${name}`);
  const emails = table(store.state, 'emails');
  assert.equal(Object.getPrototypeOf(emails), null, 'a table has no prototype');
  assert.deepEqual(Object.keys(emails).sort(), [...PROTOTYPE_NAMES].sort());
  // A row deleted and its deletion rolled back is restored as a plain row.
  await assert.rejects(
    store.transact((tx) => {
      tx.del('emails', '__proto__');
      throw new Error('roll back');
    }),
  );
  assert.equal(store.get('emails', '__proto__'), 'acc___proto__');
  await store.transact((tx) => tx.del('emails', 'toString'));
  const live = JSON.stringify(Object.entries(emails).sort());

  // Replay from the journal alone (no checkpoint yet) gives the same rows.
  const replayed = await loadState(data_dir, { repair: false, now: () => new Date() });
  assert.equal(JSON.stringify(Object.entries(table(replayed.state, 'emails')).sort()), live);
  assert.equal(table(replayed.state, 'accounts').constructor, undefined);

  // And through a checkpoint (close writes one), the loaded tables have no prototype either.
  await store.close();
  const reopened = await Store.open(data_dir);
  assert.equal(JSON.stringify(Object.entries(table(reopened.state, 'emails')).sort()), live);
  assert.equal(Object.getPrototypeOf(table(reopened.state, 'emails')), null);
  assert.equal(reopened.get('emails', 'toString'), undefined);
  assert.equal(reopened.get('accounts', 'hasOwnProperty'), undefined);
  await reopened.close();
  assert.equal((await verifyDataDir(data_dir)).ok, true);
});
