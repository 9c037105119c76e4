// The PostgreSQL store (gateway/store/pg.ts) on a throwaway cluster: the store contract
// (commit, rollback, reopen, history reads), two stores on one database serialized by it,
// a commit while PostgreSQL is down, and `migrate` of a JSON-file data dir.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { Store, StoreUnavailableError } from '../../../gateway/store/store.ts';
import pg from 'pg';
import { OPTIMISTIC_TRIES, openPgStore, pgLogOf } from '../../../gateway/store/pg.ts';
import { migrateDataDir, verifyPg } from '../../../gateway/store/pg-tools.ts';
import {
  FUNDING_TOPUP,
  InsufficientBalanceError,
  balanceMicros,
  creditWallet,
  debitWallet,
} from '../../../gateway/ledger/ledger.ts';
import { startPostgres, type PostgresCluster } from '../../support/postgres.ts';
import { SharedReservations } from '../../../gateway/chat/reservations.ts';
import { reserveShared, settle } from '../../../gateway/chat/billing.ts';
import { chatConfigSchema } from '../../../gateway/chat/config.ts';
import { availableMicros } from '../../../gateway/ledger/ledger.ts';
import { testAccount } from '../../support/store-fixtures.ts';
import { tempDir } from '../../support/temp.ts';

/** Debits 10,000 micros from `account_id` once per idempotency `key`: 'moved', or 'replayed' when the key is recorded already. */
function debitOnce(store: Store, key: string, account_id: string): Promise<'moved' | 'replayed'> {
  return store.transact((tx) => {
    if (tx.get('idempotency', key)) return 'replayed';
    debitWallet(tx, { account_id, amount_micros: 10_000, to: 'revenue:ai', memo: 'idem' });
    tx.set('idempotency', key, {
      key,
      request_hash: 'h',
      status: 200,
      body: {},
      created_at: tx.now.toISOString(),
    });
    return 'moved';
  });
}

let cluster: PostgresCluster;
before(async () => {
  cluster = await startPostgres();
});
/** Every temp dir a test made (replicas, a data dir to migrate): removed at the end, pass or fail. */
const made: string[] = [];
after(async () => {
  await cluster?.teardown();
  for (const path of made) rmSync(path, { recursive: true, force: true });
});

const dir = (prefix = 'aihub-pg-replica-') => {
  const path = tempDir(prefix);
  made.push(path);
  return path;
};
const open = async (url: string) => openPgStore(url, { replica_dir: dir(), poll_ms: 60_000 });
const account = testAccount;
const credit = (store: Store, id: string, micros: number, ref = `r-${Math.random()}`) =>
  store.transact((tx) =>
    creditWallet(tx, {
      account_id: id,
      amount_micros: micros,
      from: FUNDING_TOPUP,
      memo: 'top-up',
      ref,
    }),
  );

test('PostgreSQL store: commits, rollbacks and history reads as the JSON-file store; a new replica rebuilds them from the log', async () => {
  const url = await cluster.createDatabase();
  const store = await open(url);
  await store.transact((tx) => tx.set('accounts', 'a1', account('a1')));
  await credit(store, 'a1', 5_000_000);
  await assert.rejects(
    store.transact((tx) => {
      debitWallet(tx, { account_id: 'a1', amount_micros: 1_000_000, to: 'revenue:ai', memo: 'x' });
      throw new Error('boom');
    }),
    /boom/,
  );
  assert.equal(
    balanceMicros(store.state, 'a1'),
    5_000_000,
    'a function that throws leaves nothing',
  );
  await assert.rejects(
    store.transact((tx) =>
      debitWallet(tx, { account_id: 'a1', amount_micros: 9_000_000, to: 'revenue:ai', memo: 'x' }),
    ),
    InsufficientBalanceError,
  );
  await store.transact((tx) =>
    debitWallet(tx, { account_id: 'a1', amount_micros: 2_000_000, to: 'revenue:ai', memo: 'chat' }),
  );
  // Acknowledged means in the history indexes too: read-your-writes without a barrier, every time.
  assert.equal(
    (await store.reads.wallet({ account_id: 'a1' }, null, 'asc')).total,
    2,
    'the acknowledged debit is in the wallet history at once',
  );
  for (let i = 0; i < 20; i++) {
    await Promise.all([credit(store, 'h', 1), credit(store, 'h', 1)]);
    assert.equal(
      (await store.reads.wallet({ account_id: 'h' }, null, 'asc')).total,
      2 * (i + 1),
      `credits acknowledged in round ${i} are in the history`,
    );
  }
  await store.transact((tx) =>
    tx.history({
      type: 'usage',
      ts: tx.now.toISOString(),
      account_id: 'a1',
      prompt_tokens: 3,
      completion_tokens: 4,
      cost_micros: 2_000_000,
    }),
  );
  // '__proto__' as an id is a row like any other, here too.
  await store.transact((tx) => tx.set('emails', '__proto__', 'a1'));
  await store.readDurable();
  const wallet = await store.reads.wallet({ account_id: 'a1' }, { offset: 0, limit: 10 }, 'asc');
  assert.deepEqual(
    wallet.rows.map((r) => r.delta_micros),
    [5_000_000, -2_000_000],
  );
  assert.equal(wallet.closing_micros, 3_000_000);
  assert.equal(store.state.tables.usage?.a1?.requests, 1);
  const seq = store.state.seq;
  await store.close();

  const again = await open(url);
  assert.equal(again.state.seq, seq);
  assert.equal(balanceMicros(again.state, 'a1'), 3_000_000);
  // Usage totals carry a per-protocol split too (a usage record without a protocol is chat).
  const { by_protocol, ...totals } = (again.state.tables.usage?.a1 ?? {}) as Record<
    string,
    unknown
  >;
  assert.deepEqual(totals, {
    requests: 1,
    prompt_tokens: 3,
    completion_tokens: 4,
    cost_micros: 2_000_000,
  });
  assert.deepEqual(
    { ...(by_protocol as object) },
    {
      chat: {
        requests: 1,
        prompt_tokens: 3,
        completion_tokens: 4,
        cached_tokens: 0,
        reasoning_tokens: 0,
        cost_micros: 2_000_000,
      },
    },
  );
  assert.equal(again.get('emails', '__proto__'), 'a1');
  assert.equal((await again.reads.wallet({ account_id: 'a1' }, null, 'asc')).total, 2);
  await again.close();
  const report = await verifyPg(url);
  assert.deepEqual(report.breaches, []);
  assert.equal(report.seq, seq);
});

test('two stores on one database: concurrent debits never overdraw, an idempotency key holds across them, both read the same balance', async () => {
  const url = await cluster.createDatabase();
  const a = await open(url);
  const b = await open(url);
  await credit(a, 'w', 1_000_000);
  // 60 debits of 70,000 spread over both stores, all in flight at once: the wallet affords 14.
  const outcomes = await Promise.allSettled(
    Array.from({ length: 60 }, (_, i) =>
      (i % 2 ? a : b).transact((tx) =>
        debitWallet(tx, {
          account_id: 'w',
          amount_micros: 70_000,
          to: 'revenue:ai',
          memo: `d${i}`,
        }),
      ),
    ),
  );
  const ok = outcomes.filter((o) => o.status === 'fulfilled').length;
  assert.equal(ok, 14);
  for (const o of outcomes)
    if (o.status === 'rejected')
      assert.ok(o.reason instanceof InsufficientBalanceError, String(o.reason));
  // The same key sent to both at once: one of them records it, the other sees it.
  const once = (store: Store) => debitOnce(store, 'k1', 'w');
  const answers = await Promise.all([once(a), once(b), once(a), once(b)]);
  assert.deepEqual(answers.filter((x) => x === 'moved').length, 1, answers.join());
  await a.readDurable();
  await b.readDurable();
  assert.equal(balanceMicros(a.state, 'w'), 1_000_000 - 14 * 70_000 - 10_000);
  assert.equal(balanceMicros(b.state, 'w'), balanceMicros(a.state, 'w'));
  assert.equal(a.state.seq, b.state.seq);
  await a.close();
  await b.close();
  assert.deepEqual((await verifyPg(url)).breaches, []);
});

test('PostgreSQL down: a commit is refused with StoreUnavailableError and leaves the replica as it was; after the restart commits go on and the books agree', async () => {
  const url = await cluster.createDatabase();
  const store = await open(url);
  await credit(store, 'x', 1_000_000);
  const seq = store.state.seq;
  await cluster.stop('immediate');
  try {
    await assert.rejects(
      store.transact((tx) =>
        debitWallet(tx, {
          account_id: 'x',
          amount_micros: 100_000,
          to: 'revenue:ai',
          memo: 'lost?',
        }),
      ),
      StoreUnavailableError,
    );
    await assert.rejects(store.readDurable(), StoreUnavailableError);
    assert.equal(
      balanceMicros(store.state, 'x'),
      1_000_000,
      'the refused debit is undone in the replica',
    );
    assert.equal(store.state.seq, seq);
  } finally {
    await cluster.start();
  }
  await store.transact((tx) =>
    debitWallet(tx, { account_id: 'x', amount_micros: 300_000, to: 'revenue:ai', memo: 'after' }),
  );
  assert.equal(balanceMicros(store.state, 'x'), 700_000);
  await store.close();
  const fresh = await open(url);
  assert.equal(balanceMicros(fresh.state, 'x'), 700_000);
  assert.equal(fresh.state.seq, seq + 1);
  await fresh.close();
  assert.deepEqual((await verifyPg(url)).breaches, []);
});

test('migrate: a JSON-file data dir (postings, a finalized payment, usage history, sessions) moves into PostgreSQL and both sides agree', async () => {
  const data_dir = dir('aihub-migrate-');
  const file = await Store.open(data_dir);
  await file.transact((tx) => tx.set('accounts', 'm1', account('m1')));
  await credit(file, 'm1', 9_000_000, 'topup-1');
  await file.transact((tx) =>
    debitWallet(tx, {
      account_id: 'm1',
      amount_micros: 1_500_000,
      to: 'revenue:recharge',
      memo: 'recharge',
    }),
  );
  await file.transact((tx) =>
    tx.history({
      type: 'usage',
      ts: tx.now.toISOString(),
      account_id: 'm1',
      prompt_tokens: 10,
      completion_tokens: 5,
      cost_micros: 7,
    }),
  );
  await file.transact((tx) =>
    tx.set('web_sessions' as never, 'sess-hash', {
      account_id: 'm1',
      created_at: tx.now.toISOString(),
    } as never),
  );
  const txn = {
    id: 'txn_1',
    account_id: 'm1',
    service: 'recharge',
    status: 'success',
    stage: 'final',
    created_at: new Date().toISOString(),
  };
  await file.transact((tx) => tx.set('payment_txns' as never, 'txn_1', txn as never));
  await file.close();

  const url = await cluster.createDatabase();
  const report = await migrateDataDir(data_dir, url);
  assert.deepEqual(report.differences, []);
  assert.ok(report.ok);
  assert.equal(report.records, 6);
  assert.ok(report.verify.ok);
  const store = await open(url);
  assert.equal(balanceMicros(store.state, 'm1'), 7_500_000);
  assert.deepEqual(
    store.get('payment_txns' as never, 'txn_1'),
    txn as never,
    'a finalized transaction is found in the replica’s history',
  );
  assert.equal((await store.reads.txns({ account_id: 'm1' }, { offset: 0, limit: 10 })).total, 1);
  await store.close();
  // A second migrate into the same database is refused, and the source is untouched.
  await assert.rejects(migrateDataDir(data_dir, url), /already holds an AIHub store/);
});

test('chat reservations across two stores: one gateway’s worst case binds the other; a lapsed lease is released once; a settlement bills once', async () => {
  const url = await cluster.createDatabase();
  const a = await open(url);
  const b = await open(url);
  let now = 1_000_000;
  const clock = () => now;
  const ga = new SharedReservations(a, 'gw-a', 30_000, clock);
  const gb = new SharedReservations(b, 'gw-b', 30_000, clock);
  await credit(a, 'acc', 1_000_000);
  const tier = chatConfigSchema.parse({}).models['service-ai-standard-6']; // 100 / 400 units per million tokens
  const input = (request_id: string, worst_case_micros: number) => ({
    account_id: 'acc',
    key_id: 'key',
    tier,
    request_id,
    worst_case_micros,
    free_tokens: 0,
  });

  const r1 = await reserveShared(ga, input('req_1', 600_000));
  await assert.rejects(
    reserveShared(gb, input('req_2', 400_001)),
    InsufficientBalanceError,
    'the other gateway sees the 600,000 set aside',
  );
  const r2 = await reserveShared(gb, input('req_2', 400_000));
  await a.readDurable();
  assert.equal(availableMicros(a.state, 'acc'), 0);

  // Gateway a settles req_1 at its actual cost: billed once, the rest is free again everywhere.
  const s1 = await settle(
    a,
    r1,
    {
      prompt_tokens: 1_000,
      completion_tokens: 500,
      status: 'ok',
      target: 'builtin',
      latency_ms: 1,
      stream: false,
    },
    now,
  );
  assert.equal(s1.cost_micros, 300_000);
  r1.money.release(); // the request's end: a no-op after the settlement
  await b.readDurable();
  assert.equal(availableMicros(b.state, 'acc'), 1_000_000 - 300_000 - 400_000);

  // Gateway b "dies" holding req_2: while its lease runs, a's pass keeps it; after, a releases it, once.
  await ga.tick();
  await b.readDurable();
  assert.equal(
    availableMicros(b.state, 'acc'),
    1_000_000 - 300_000 - 400_000,
    'a lease that has not lapsed is kept',
  );
  now += 30_001;
  await Promise.all([ga.tick(), ga.tick()]);
  await a.readDurable();
  assert.equal(availableMicros(a.state, 'acc'), 1_000_000 - 300_000);
  assert.deepEqual(Object.keys(a.state.tables.chat_reservations ?? {}), []);
  // Its settlement, if it comes after all, bills the actual cost once and releases nothing twice.
  const s2 = await settle(
    b,
    r2,
    {
      prompt_tokens: 0,
      completion_tokens: 500,
      status: 'ok',
      target: 'builtin',
      latency_ms: 1,
      stream: false,
    },
    now,
  );
  assert.equal(s2.cost_micros, 200_000);
  await a.readDurable();
  assert.equal(balanceMicros(a.state, 'acc'), 1_000_000 - 300_000 - 200_000);
  assert.equal(availableMicros(a.state, 'acc'), 1_000_000 - 300_000 - 200_000);
  assert.equal(a.state.tables.chat_reserved?.acc, undefined);
  ga.stop();
  gb.stop();
  await a.close();
  await b.close();
  assert.deepEqual((await verifyPg(url)).breaches, []);
});

test('a renewing owner keeps its reservation past one lease', async () => {
  const url = await cluster.createDatabase();
  const a = await open(url);
  let now = 0;
  const ga = new SharedReservations(a, 'gw-a', 1_000, () => now);
  await credit(a, 'acc', 1_000);
  const tier = chatConfigSchema.parse({}).models['service-ai-standard-6'];
  await reserveShared(ga, {
    account_id: 'acc',
    key_id: 'k',
    tier,
    request_id: 'r',
    worst_case_micros: 1_000,
    free_tokens: 0,
  });
  for (let i = 0; i < 5; i++) {
    now += 600;
    await ga.tick();
  }
  assert.equal(availableMicros(a.state, 'acc'), 0, 'renewed at every pass, never lapsed');
  await a.close();
});

/** Waits until `ready()` holds, looking again after every event-loop turn with I/O (bounded). */
async function until(ready: () => boolean, what: string, limit_ms = 20_000): Promise<void> {
  const deadline = Date.now() + limit_ms;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

test('background work: one store of two holds the leader lock; when it closes, the other takes over; records of one reach the other’s listeners', async () => {
  const url = await cluster.createDatabase();
  const a = await openPgStore(url, { replica_dir: dir(), poll_ms: 50 });
  const b = await openPgStore(url, { replica_dir: dir(), poll_ms: 50 });
  await until(() => a.isLeader() || b.isLeader(), 'a leader');
  assert.ok(!(a.isLeader() && b.isLeader()), 'never two leaders');
  const [leader, other] = a.isLeader() ? [a, b] : [b, a];
  const heard: number[] = [];
  other.onSharedRecord((record) => heard.push(record.s));
  await credit(leader, 'l', 1_000);
  await other.readDurable();
  assert.deepEqual(heard, [leader.state.seq]);
  await leader.close();
  await until(() => other.isLeader(), 'the other store to take over');
  await other.close();
});

test('a batch that fails before its functions ran (the head lock not granted in time) answers every caller store_unavailable; nothing waits forever', async () => {
  const url = await cluster.createDatabase();
  const store = await openPgStore(url, {
    replica_dir: dir(),
    poll_ms: 60_000,
    statement_timeout_ms: 300,
  });
  await credit(store, 'q', 1_000);
  const blocker = new pg.Client({ connectionString: url });
  await blocker.connect();
  await blocker.query('BEGIN');
  await blocker.query('SELECT seq FROM aihub_head WHERE id = 1 FOR UPDATE'); // another writer holds the lock
  try {
    const outcomes = await Promise.allSettled(
      [1, 2, 3].map((i) => store.transact((tx) => tx.set('emails', `q${i}`, 'q'))),
    );
    for (const outcome of outcomes)
      assert.ok(
        outcome.status === 'rejected' && outcome.reason instanceof StoreUnavailableError,
        String(outcome.status),
      );
    assert.equal(store.get('emails', 'q1'), undefined);
  } finally {
    await blocker.query('ROLLBACK');
    await blocker.end();
  }
  await store.transact((tx) => tx.set('emails', 'q1', 'q'));
  assert.equal(store.get('emails', 'q1'), 'q');
  await store.close();
});

test('optimistic commit: another gateway commits between stage and commit; the batch is undone, takes its records, runs again on them and never overdraws', async () => {
  const url = await cluster.createDatabase();
  const a = await open(url);
  const b = await open(url);
  await credit(a, 'c', 100_000);
  await b.readDurable();
  const log = pgLogOf(a)!;
  const debit = (store: Store, memo: string) =>
    store.transact((tx) =>
      debitWallet(tx, { account_id: 'c', amount_micros: 70_000, to: 'revenue:ai', memo }),
    );
  // a stages its debit on 100,000 (it fits); before it is sent, b spends 70,000 of it.
  let hooked = 0;
  log.before_commit = async () => {
    if (hooked++ === 0) await debit(b, 'b first');
  };
  const conflicts = log.stats.conflicts;
  await assert.rejects(debit(a, 'a second'), InsufficientBalanceError);
  assert.equal(log.stats.conflicts - conflicts, 1, 'the first attempt conflicted');
  assert.equal(hooked, 2, 'staged twice: on the stale replica, then on the current one');
  assert.equal(balanceMicros(a.state, 'c'), 30_000, 'a holds b’s debit, not its own');
  // A conflict whose second attempt fits: b spends 10,000 first, a’s 20,000 still goes.
  hooked = 0;
  log.before_commit = async () => {
    if (hooked++ === 0)
      await b.transact((tx) =>
        debitWallet(tx, { account_id: 'c', amount_micros: 10_000, to: 'revenue:ai', memo: 'b' }),
      );
  };
  // What the function changes outside the state is undone with each run another commit beat.
  const outside = new Set<number>();
  let run = 0;
  await a.transact((tx) => {
    const mark = ++run;
    outside.add(mark);
    tx.onUndo(() => outside.delete(mark));
    debitWallet(tx, { account_id: 'c', amount_micros: 20_000, to: 'revenue:ai', memo: 'a' });
  });
  assert.equal(log.stats.conflicts - conflicts, 2);
  assert.equal(run, 2, 'run twice');
  assert.deepEqual([...outside], [2], 'only the run that committed left its mark');
  log.before_commit = null;
  await b.readDurable();
  assert.equal(balanceMicros(a.state, 'c'), 0);
  assert.equal(balanceMicros(b.state, 'c'), 0);
  assert.equal(a.state.seq, b.state.seq);
  await a.close();
  await b.close();
  assert.deepEqual((await verifyPg(url)).breaches, []);
  const fresh = await open(url);
  assert.equal(balanceMicros(fresh.state, 'c'), 0, 'the log holds exactly what the replicas did');
  await fresh.close();
});

test(`optimistic commit: a batch that conflicts ${OPTIMISTIC_TRIES} times in a row takes the head lock and commits; an idempotency key still moves money once`, async () => {
  const url = await cluster.createDatabase();
  const a = await open(url);
  const b = await open(url);
  await credit(a, 'i', 1_000_000);
  const log = pgLogOf(a)!;
  let hooked = 0;
  log.before_commit = async () => {
    hooked++;
    await b.transact((tx) => tx.set('emails', `b${hooked}`, 'b'));
  };
  const once = (store: Store) => debitOnce(store, 'k', 'i');
  const locked = log.stats.locked;
  assert.equal(await once(a), 'moved');
  assert.equal(hooked, OPTIMISTIC_TRIES, 'every optimistic attempt lost to b');
  assert.equal(log.stats.locked - locked, 1, 'then the locked path committed');
  log.before_commit = null;
  assert.equal(await once(b), 'replayed');
  await b.readDurable();
  for (const store of [a, b]) {
    assert.equal(balanceMicros(store.state, 'i'), 990_000);
    for (let i = 1; i <= OPTIMISTIC_TRIES; i++) assert.equal(store.get('emails', `b${i}`), 'b');
  }
  await a.close();
  await b.close();
  assert.deepEqual((await verifyPg(url)).breaches, []);
});

test('two stores, one wallet, many concurrent commits on both: exact final balance, same state on both, verify passes', async () => {
  const url = await cluster.createDatabase();
  const a = await open(url);
  const b = await open(url);
  await credit(a, 'm', 10_000_000);
  await b.readDurable();
  // Waves of debits and credits on both at once, so that batches of each meet the other’s.
  for (let wave = 0; wave < 10; wave++)
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => {
        const store = i % 2 ? a : b;
        return i % 5 === 0
          ? credit(store, 'm', 3_000, `w${wave}-${i}`)
          : store.transact((tx) =>
              debitWallet(tx, {
                account_id: 'm',
                amount_micros: 7_000,
                to: 'revenue:ai',
                memo: `w${wave}-${i}`,
              }),
            );
      }),
    );
  await a.readDurable();
  await b.readDurable();
  const expected = 10_000_000 + 10 * 8 * 3_000 - 10 * 32 * 7_000;
  assert.equal(balanceMicros(a.state, 'm'), expected);
  assert.equal(balanceMicros(b.state, 'm'), expected);
  assert.equal(a.state.seq, b.state.seq);
  await a.close();
  await b.close();
  assert.deepEqual((await verifyPg(url)).breaches, []);
});
