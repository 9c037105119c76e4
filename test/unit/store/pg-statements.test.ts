// The PostgreSQL store counts the statements it sends by kind (issue #30:
// aihub_store_statements_total{kind}): a request's commit statements and loads apart from the
// periodic work the rooms mark with Store.background, whoever started the batch a commit rides in.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { openPgStore } from '../../../gateway/store/pg/store.ts';
import { FUNDING_TOPUP, creditWallet } from '../../../gateway/ledger/ledger.ts';
import { startPostgres, type PostgresCluster } from '../../support/postgres.ts';

let cluster: PostgresCluster;
before(async () => {
  cluster = await startPostgres();
});
after(async () => {
  await cluster?.teardown();
});

test('PostgreSQL: statements are counted by kind; periodic work counts as background, and a commit it starts counts as a commit', async () => {
  const store = await openPgStore(await cluster.createDatabase(), { poll_ms: 60_000 });
  try {
    const credit = (memo: string) =>
      store.transact((tx) =>
        creditWallet(tx, { account_id: 'a', amount_micros: 1, from: FUNDING_TOPUP, memo }),
      );
    await credit('warm');
    const kinds = () => ({ ...store.stats.statements_by_kind });
    const before = kinds();
    const keys_locked = store.stats.keys_locked;
    await credit('one');
    let now = kinds();
    assert.equal(now.commit! - before.commit!, 1, 'one commit statement');
    assert.ok(store.stats.keys_locked > keys_locked, 'the keys it locked are counted');
    // Periodic work: its reads are background; a transaction it queues is still a commit, and
    // so is a request's transaction queued in the same turn (one batch, one statement).
    await store.background(() => store.list('payment_txns', 'status', 'pending'));
    now = kinds();
    assert.equal(now.background, 1, 'a read of periodic work');
    assert.equal(now.read ?? 0, before.read ?? 0);
    await Promise.all([store.background(() => credit('periodic')), credit('request')]);
    const last = kinds();
    assert.equal(last.commit! - now.commit!, 1, 'the batch of both is a commit statement');
    assert.equal(last.background, 1, 'nothing of the batch counted as background');
    const sum = Object.values(last).reduce((a, b) => a + b, 0);
    assert.equal(sum, store.stats.statements, 'the kinds add up to every statement');
  } finally {
    await store.close();
  }
});

test('PostgreSQL: a non-durable transaction commits without the WAL flush, visible at once; a batch with a durable one waits for it', async () => {
  const url = await cluster.createDatabase();
  const store = await openPgStore(url, { poll_ms: 60_000 });
  const other = await openPgStore(url, { poll_ms: 60_000 });
  try {
    const credit = (memo: string, durable: boolean) =>
      store.transact(
        (tx) => creditWallet(tx, { account_id: 'a', amount_micros: 1, from: FUNDING_TOPUP, memo }),
        { durable },
      );
    await credit('warm', true);
    const kinds = () => ({ ...store.stats.statements_by_kind });
    const before = kinds();
    await credit('lease', false);
    const now = kinds();
    assert.equal(
      (now.commit_async ?? 0) - (before.commit_async ?? 0),
      1,
      'one asynchronous commit',
    );
    assert.equal(now.commit, before.commit, 'and no synchronous one');
    // Committed: another gateway's store reads it from the database.
    assert.equal(await other.read((state) => state.balances['wallet:a'], { fresh: true }), 2);
    // One batch of a durable and a non-durable transaction: the durable one decides.
    await Promise.all([credit('lease 2', false), credit('money', true)]);
    const last = kinds();
    assert.equal(last.commit! - now.commit!, 1, 'the batch is a synchronous commit');
    assert.equal(last.commit_async, now.commit_async);
  } finally {
    await other.close();
    await store.close();
  }
});
