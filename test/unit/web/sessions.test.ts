import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Request } from 'express';
import { Store } from '../../../gateway/store/store.ts';
import {
  COOKIE,
  SEEN_WRITE_EVERY_MS,
  SESSION_IDLE_MS,
  SESSION_LIFETIME_MS,
  Sessions,
} from '../../../gateway/web/sessions.ts';
import { tempDir } from '../../support/temp.ts';

const MINUTE = 60_000;

async function setup() {
  let now_ms = Date.parse('2026-03-01T08:00:00.000Z');
  const store = await Store.open(tempDir('aihub-sessions-'), {
    now: () => new Date(now_ms),
  });
  await store.transact((tx) =>
    tx.set('accounts', 'a', {
      id: 'a',
      email: 'a@x.io',
      name: '',
      status: 'active',
      services: { ai: true, recharge: false, dmt: false, pan: false, bills: false },
      kyc_status: 'none',
      ip_whitelist: [],
      password_hash: null,
      webhook: null,
      created_at: '2026-01-01T00:00:00.000Z',
    }),
  );
  const sessions = () =>
    new Sessions(
      store,
      () => new Date(now_ms),
      () => false,
    );
  const first = sessions();
  const { token, token_hash } = await store.transact((tx) => first.startInTx(tx, 'user', 'a'));
  const req = { headers: { cookie: `${COOKIE.user}=${token}` } } as unknown as Request;
  return {
    store,
    first,
    sessions,
    req,
    token_hash,
    advance: (ms: number) => (now_ms += ms),
    /** Lets a background write of the last use land. */
    settle: () => store.transact(() => undefined),
  };
}

test('sessions: idle for longer than SESSION_IDLE_MS ends a session, in one process', async () => {
  const { first, req, advance, store } = await setup();
  assert.ok(first.current(req, 'user'));
  advance(SESSION_IDLE_MS - MINUTE);
  assert.ok(first.current(req, 'user'), 'used just in time');
  advance(SESSION_IDLE_MS + MINUTE);
  assert.equal(first.current(req, 'user'), null);
  await store.close();
});

test('sessions: a restart does not revive an idle session; the written last use carries over', async () => {
  const { sessions, req, advance, store } = await setup();
  // Never used after log-in: after a restart its idle time counts from its start.
  advance(SESSION_IDLE_MS + MINUTE);
  assert.equal(sessions().current(req, 'user'), null, 'a restart does not restart the idle clock');
  await store.close();

  const other = await setup();
  other.advance(30 * MINUTE);
  assert.ok(other.first.current(other.req, 'user'));
  await other.settle();
  assert.equal(
    other.store.get('web_sessions', other.token_hash)?.seen_at,
    '2026-03-01T08:30:00.000Z',
    'the use was written',
  );
  // Restarts: 2 h 10 min after that use the session is over; 1 h 50 min after it, live.
  other.advance(130 * MINUTE);
  assert.equal(other.sessions().current(other.req, 'user'), null);
  other.advance(-20 * MINUTE);
  assert.ok(other.sessions().current(other.req, 'user'));
  await other.store.close();
});

test('sessions: the last use is written at most once per SEEN_WRITE_EVERY_MS however many pages are viewed', async () => {
  const { first, req, advance, settle, store, token_hash } = await setup();
  const seq = store.state.seq;
  for (let i = 0; i < 50; i++) {
    assert.ok(first.current(req, 'user'));
    advance(SEEN_WRITE_EVERY_MS / 25); // 50 views over two write periods
  }
  await settle();
  const writes = store.state.seq - seq;
  assert.ok(writes >= 1 && writes <= 2, `${writes} writes for 50 page views over 20 minutes`);
  assert.ok(store.get('web_sessions', token_hash)?.seen_at);
  await store.close();
});

test('sessions: a log-in keeps an account to 20 sessions, sweeps expired ones of any account, and ending all touches only that account', async () => {
  const { store, first, advance } = await setup(); // one session of account a, at 08:00
  await store.transact((tx) =>
    tx.set('accounts', 'b', { ...store.get('accounts', 'a')!, id: 'b', email: 'b@x.io' }),
  );
  const live = (account_id: string) =>
    Object.values(store.rows('web_sessions')).filter((s) => s.account_id === account_id).length;
  for (let i = 0; i < 3; i++) await store.transact((tx) => first.startInTx(tx, 'user', 'b'));
  advance(SESSION_LIFETIME_MS + MINUTE); // every session so far is past its end
  await store.transact((tx) => first.startInTx(tx, 'user', 'a'));
  assert.equal(
    Object.keys(store.rows('web_sessions')).length,
    1,
    "the log-in swept the expired sessions, b's too",
  );
  for (let i = 0; i < 24; i++) {
    advance(1_000);
    await store.transact((tx) => first.startInTx(tx, 'user', 'a'));
  }
  assert.equal(live('a'), 20, 'at most 20 sessions per account: the oldest go');
  for (let i = 0; i < 2; i++) await store.transact((tx) => first.startInTx(tx, 'user', 'b'));
  await store.transact((tx) => first.endAllInTx(tx, 'a'));
  assert.equal(live('a'), 0);
  assert.equal(live('b'), 2, "b's sessions are untouched");
  await store.close();
});
