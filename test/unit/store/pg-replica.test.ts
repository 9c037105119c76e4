// A PostgreSQL gateway's replica kept across restarts (gateway/store/pg-replica.ts): a
// restart applies only the log records committed since the replica stopped, counted by
// `Store.replicaOpened()`, never by time; a replica that belongs to another database, that
// is ahead of or different from the log, or that a machine restart may have cut, is rebuilt
// from the whole log, and the books verify either way.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  cpSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Store } from '../../../gateway/store/store.ts';
import { openPgStore, type PgStoreOptions } from '../../../gateway/store/pg.ts';
import { REPLICA_STAMP, type ReplicaStamp } from '../../../gateway/store/pg-replica.ts';
import { listSegments } from '../../../gateway/store/journal.ts';
import { verifyPg } from '../../../gateway/store/pg-tools.ts';
import { FUNDING_TOPUP, balanceMicros, creditWallet } from '../../../gateway/ledger/ledger.ts';
import { headSeq, startPostgres, type PostgresCluster } from '../../support/postgres.ts';
import { testAccount } from '../../support/store-fixtures.ts';

let cluster: PostgresCluster;
before(async () => {
  cluster = await startPostgres();
});
const made: string[] = [];
after(async () => {
  await cluster?.teardown();
  for (const path of made) rmSync(path, { recursive: true, force: true });
});

const tempDir = () => {
  const path = mkdtempSync(join(tmpdir(), 'aihub-pg-kept-'));
  made.push(path);
  return path;
};
/** A replica dir that does not exist yet (a new gateway's). */
const newReplicaDir = () => join(tempDir(), 'pg-replica');
const open = (url: string, replica_dir: string, options: Partial<PgStoreOptions> = {}) =>
  openPgStore(url, { replica_dir, poll_ms: 60_000, ...options });

let refs = 0;
/** `n` credits of 1,000 micro-units to `account`, each its own record, some of them at once. */
async function credits(store: Store, account: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 50)
    await Promise.all(
      Array.from({ length: Math.min(50, n - i) }, () =>
        store.transact((tx) =>
          creditWallet(tx, {
            account_id: account,
            amount_micros: 1_000,
            from: FUNDING_TOPUP,
            memo: 'top-up',
            ref: `ref-${++refs}`,
          }),
        ),
      ),
    );
}

const stampOf = (dir: string) =>
  JSON.parse(readFileSync(join(dir, REPLICA_STAMP), 'utf8')) as ReplicaStamp;
const setStamp = (dir: string, change: Partial<ReplicaStamp>) =>
  writeFileSync(join(dir, REPLICA_STAMP), JSON.stringify({ ...stampOf(dir), ...change }), {
    mode: 0o600,
  });

/** The pid of a process that has exited (a gateway killed with SIGKILL leaves one like it in its stamp). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8',
  });
  return Number(child.stdout);
}

/** The replica's journal lines, last segment. */
function lastSegment(dir: string): string {
  return listSegments(join(dir, 'journal')).at(-1)!.file;
}

/** A replica closed cleanly after `n` credits to account 'a' (the accounts row first). */
async function closedReplica(url: string, n: number): Promise<string> {
  const dir = newReplicaDir();
  const store = await open(url, dir);
  await store.transact((tx) => tx.set('accounts', 'a', testAccount('a')));
  await credits(store, 'a', n);
  await store.close();
  return dir;
}

test('a restart after commits applies no log record, and reads what it had', async () => {
  const url = await cluster.createDatabase();
  const dir = newReplicaDir();
  const first = await open(url, dir);
  assert.deepEqual(first.replicaOpened(), { applied: 0, rebuilt: null, fresh: true, from_seq: 0 });
  await first.transact((tx) => tx.set('accounts', 'a', testAccount('a')));
  await credits(first, 'a', 120);
  const seq = first.state.seq;
  await first.close();
  assert.equal(stampOf(dir).clean, true);
  assert.equal(stampOf(dir).seq, seq);

  const again = await open(url, dir);
  assert.deepEqual(again.replicaOpened(), {
    applied: 0,
    rebuilt: null,
    fresh: false,
    from_seq: seq,
  });
  assert.equal(stampOf(dir).clean, false, 'unclean while open');
  assert.equal(balanceMicros(again.state, 'a'), 120_000);
  assert.equal((await again.reads.wallet({ account_id: 'a' }, null, 'asc')).total, 120);
  await credits(again, 'a', 3); // it goes on committing through the log
  await again.close();
  assert.deepEqual((await verifyPg(url)).breaches, []);
});

test('another gateway commits while this one is down: the restart applies exactly those records, and both agree', async () => {
  const url = await cluster.createDatabase();
  const dir = await closedReplica(url, 40);
  const stopped_at = stampOf(dir).seq!;
  const other = await open(url, newReplicaDir());
  await credits(other, 'a', 25);
  await credits(other, 'b', 5);
  const head_now = await headSeq(url);
  assert.equal(head_now - stopped_at, 30, 'one record per credit');

  const again = await open(url, dir);
  assert.deepEqual(again.replicaOpened(), {
    applied: 30,
    rebuilt: null,
    fresh: false,
    from_seq: stopped_at,
  });
  assert.equal(again.state.seq, head_now);
  for (const account of ['a', 'b'])
    assert.equal(balanceMicros(again.state, account), balanceMicros(other.state, account));
  assert.equal(balanceMicros(again.state, 'a'), 65_000);
  assert.equal((await again.reads.wallet({ account_id: 'a' }, null, 'asc')).total, 65);
  assert.equal((await again.reads.wallet({ account_id: 'b' }, null, 'asc')).total, 5);
  await other.close();
  await again.close();
  assert.deepEqual((await verifyPg(url)).breaches, []);
});

test('a new gateway builds its replica from the whole log, a page at a time', async () => {
  const url = await cluster.createDatabase();
  const writer = await open(url, newReplicaDir());
  await credits(writer, 'big', 4_500); // more than two pages of the log (2,000 records each)
  await writer.close();
  const fresh = await open(url, newReplicaDir());
  assert.deepEqual(fresh.replicaOpened(), {
    applied: 4_500,
    rebuilt: null,
    fresh: true,
    from_seq: 0,
  });
  assert.equal(balanceMicros(fresh.state, 'big'), 4_500_000);
  assert.equal((await fresh.reads.wallet({ account_id: 'big' }, null, 'asc')).total, 4_500);
  await fresh.close();
});

test('a replica of another database is rebuilt from this one’s log; the books verify', async () => {
  const url_1 = await cluster.createDatabase();
  const url_2 = await cluster.createDatabase();
  const dir = await closedReplica(url_1, 10);
  const writer = await open(url_2, newReplicaDir());
  await credits(writer, 'z', 7);
  await writer.close();
  const warnings: string[] = [];
  const store = await open(url_2, dir, { warn: (message) => warnings.push(message) });
  const opened = store.replicaOpened()!;
  assert.match(opened.rebuilt ?? '', /another database/);
  assert.equal(opened.fresh, true);
  assert.equal(opened.applied, 7);
  assert.equal(warnings.filter((w) => w.includes('rebuilding the replica')).length, 1);
  assert.equal(balanceMicros(store.state, 'a'), 0, 'nothing of the other database remains');
  assert.equal(store.get('accounts', 'a'), undefined);
  assert.equal(balanceMicros(store.state, 'z'), 7_000);
  await store.close();
  assert.deepEqual((await verifyPg(url_2)).breaches, []);
});

test('a database restored to an older point under a replica: the replica is rebuilt, whether the log is behind it or has since passed it with other records', async () => {
  const url = await cluster.createDatabase();
  const name = new URL(url).pathname.slice(1);
  const dir = newReplicaDir();
  const store = await open(url, dir);
  await store.transact((tx) => tx.set('accounts', 'a', testAccount('a')));
  await credits(store, 'a', 10);
  await store.close();
  // A backup (a copy of the database: same db_id), then more commits, then the restore.
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  const restore = async () => {
    await admin.query(`DROP DATABASE ${name}`);
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${name}_backup`);
  };
  try {
    await admin.query(`CREATE DATABASE ${name}_backup TEMPLATE ${name}`);
    const more = await open(url, dir);
    await credits(more, 'a', 10);
    await more.close();
    await restore();

    const behind = await open(url, dir);
    assert.match(behind.replicaOpened()!.rebuilt ?? '', /log ends at/);
    assert.equal(balanceMicros(behind.state, 'a'), 10_000);
    await behind.close();

    // Restored again, then written past the replica's record by another gateway.
    const ahead = await open(url, dir);
    await credits(ahead, 'a', 10);
    await ahead.close();
    await restore();
    const other = await open(url, newReplicaDir());
    await credits(other, 'b', 15);
    await other.close();
    const diverged = await open(url, dir);
    assert.match(diverged.replicaOpened()!.rebuilt ?? '', /differs from the database/);
    assert.equal(balanceMicros(diverged.state, 'a'), 10_000);
    assert.equal(balanceMicros(diverged.state, 'b'), 15_000);
    assert.equal(diverged.state.seq, await headSeq(url));
    await diverged.close();
    assert.deepEqual((await verifyPg(url)).breaches, []);
  } finally {
    await admin.end();
  }
});

test('after a crash of its process (same boot), the replica is kept: a torn last line is dropped and the log fills in the rest', async () => {
  const url = await cluster.createDatabase();
  const dir = await closedReplica(url, 12);
  const stopped_at = stampOf(dir).seq!;
  // As a SIGKILL leaves it: the stamp still unclean, its process gone, a line cut mid-write.
  setStamp(dir, { clean: false, pid: deadPid() });
  appendFileSync(lastSegment(dir), `{"s":${stopped_at + 1},"t":"2026-01-01T00:00:00.000Z","op`);
  const other = await open(url, newReplicaDir());
  await credits(other, 'a', 4);
  await other.close();
  const store = await open(url, dir);
  assert.deepEqual(store.replicaOpened(), {
    applied: 4,
    rebuilt: null,
    fresh: false,
    from_seq: stopped_at,
  });
  assert.equal(balanceMicros(store.state, 'a'), 16_000);
  await store.close();
});

test('an unclean replica is rebuilt after a machine restart (its journal may have lost unsynced writes), or when its gateway still runs (a copy)', async () => {
  const url = await cluster.createDatabase();
  const dir = await closedReplica(url, 5);
  setStamp(dir, { clean: false, pid: deadPid(), boot_id: 'the-boot-before' });
  const rebooted = await open(url, dir, { boot_id: 'this-boot' });
  assert.match(rebooted.replicaOpened()!.rebuilt ?? '', /machine restarted/);
  assert.equal(rebooted.replicaOpened()!.applied, 6);
  // A copy of a replica in use (its stamp unclean, naming a live process).
  const copy = newReplicaDir();
  cpSync(dir, copy, { recursive: true });
  rmSync(join(copy, 'gateway.lock'), { force: true });
  await rebooted.close();
  const copied = await open(url, copy, { boot_id: 'this-boot' });
  assert.match(copied.replicaOpened()!.rebuilt ?? '', /still running/);
  assert.equal(balanceMicros(copied.state, 'a'), 5_000);
  await copied.close();
  // The same machine, closed cleanly: a stopped replica may be copied to start a new gateway.
  const clean_copy = newReplicaDir();
  cpSync(dir, clean_copy, { recursive: true });
  const started = await open(url, clean_copy);
  assert.deepEqual(started.replicaOpened(), {
    applied: 0,
    rebuilt: null,
    fresh: false,
    from_seq: 6,
  });
  await started.close();
});

test('a replica ahead of the log, or whose last record differs from it, or whose journal lost its last record, is rebuilt', async () => {
  const url = await cluster.createDatabase();
  const dir = await closedReplica(url, 8);
  const seq = stampOf(dir).seq!;
  const unclean = () => setStamp(dir, { clean: false, pid: deadPid() });

  // A record the database does not have (nothing writes one: this is the check that would catch it).
  unclean();
  appendFileSync(
    lastSegment(dir),
    `${JSON.stringify({ s: seq + 1, t: new Date().toISOString(), ops: [{ o: 'set', t: 'emails', id: 'x', v: 'a' }] })}\n`,
  );
  let store = await open(url, dir);
  assert.match(store.replicaOpened()!.rebuilt ?? '', /log ends at/);
  assert.equal(store.get('emails', 'x'), undefined);
  await store.close();

  // Its last record changed on disk (the checkpoint covers it, so only the comparison sees it).
  unclean();
  const file = lastSegment(dir);
  const text = readFileSync(file, 'utf8');
  const cut = text.lastIndexOf('"memo":"top-up"');
  assert.ok(cut > 0);
  writeFileSync(file, `${text.slice(0, cut)}"memo":"top-uq"${text.slice(cut + 15)}`);
  store = await open(url, dir);
  assert.match(store.replicaOpened()!.rebuilt ?? '', /differs from the database/);
  await store.close();

  // Closed cleanly, then its last journal line lost (the checkpoint says more than the journal holds).
  const lines = readFileSync(lastSegment(dir), 'utf8');
  truncateSync(lastSegment(dir), lines.lastIndexOf('\n', lines.length - 2) + 1);
  store = await open(url, dir);
  assert.match(store.replicaOpened()!.rebuilt ?? '', /record/);
  assert.equal(balanceMicros(store.state, 'a'), 8_000);
  assert.equal(store.state.seq, seq);
  await store.close();
  assert.deepEqual((await verifyPg(url)).breaches, []);
});
