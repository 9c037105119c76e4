import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Store, readCheckpoint } from '../../../gateway/store/store.ts';
import { CorruptStoreError, listSegments } from '../../../gateway/store/journal.ts';
import {
  FUNDING_TOPUP,
  InsufficientBalanceError,
  balanceMicros,
  creditWallet,
  debitWallet,
} from '../../../gateway/ledger/ledger.ts';
import { verifyDataDir } from '../../../gateway/store/verify.ts';
import { testAccount } from '../../support/store-fixtures.ts';
import { tempDir } from '../../support/temp.ts';

const dir = () => tempDir('aihub-store-');
const account = testAccount;

test('a transaction that throws leaves no trace in memory or on disk', async () => {
  const data_dir = dir();
  const store = await Store.open(data_dir);
  await store.transact((tx) => {
    tx.set('accounts', 'a', account('a'));
    creditWallet(tx, {
      account_id: 'a',
      amount_micros: 5_000_000,
      from: FUNDING_TOPUP,
      memo: 'top-up',
    });
  });
  await assert.rejects(
    store.transact((tx) => {
      tx.set('accounts', 'b', account('b'));
      debitWallet(tx, {
        account_id: 'a',
        amount_micros: 1_000_000,
        to: 'revenue:x',
        memo: 'first',
      });
      debitWallet(tx, {
        account_id: 'a',
        amount_micros: 9_000_000,
        to: 'revenue:x',
        memo: 'too much',
      });
    }),
    InsufficientBalanceError,
  );
  assert.equal(balanceMicros(store.state, 'a'), 5_000_000);
  assert.equal(store.get('accounts', 'b'), undefined);
  assert.equal(store.state.balances['revenue:x'] ?? 0, 0);
  await store.close();
  const reopened = await Store.open(data_dir);
  assert.equal(balanceMicros(reopened.state, 'a'), 5_000_000);
  assert.equal(reopened.get('accounts', 'b'), undefined);
  await reopened.close();
});

test('state survives reopen through the journal alone, and through checkpoint + journal', async () => {
  const data_dir = dir();
  const store = await Store.open(data_dir, { checkpoint_every_records: 10 });
  await store.transact((tx) => tx.set('accounts', 'a', account('a')));
  const credit = (i: number) =>
    store.transact((tx) =>
      creditWallet(tx, {
        account_id: 'a',
        amount_micros: 1_000_000,
        from: FUNDING_TOPUP,
        memo: `c${i}`,
      }),
    );
  // Ten records: the background checkpoint starts; wait for it and its index manifest (a
  // process that crashed runs nothing after, while this dropped store would go on writing).
  for (let i = 0; i < 10; i++) await credit(i);
  for (const deadline = Date.now() + 10_000; store.checkpoints === 0;) {
    assert.ok(Date.now() < deadline, 'a checkpoint was taken');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await (store as any).checkpointing;
  // No checkpoint after it: the rest is the journal's alone. (Written while the checkpoint
  // ran, the rest could all land before its snapshot on a loaded machine: CI saw seq 26.)
  (store as any).checkpoint_timer && clearInterval((store as any).checkpoint_timer);
  (store as any).options.checkpoint_every_records = Number.MAX_SAFE_INTEGER;
  for (let i = 10; i < 25; i++) await credit(i);
  const checkpoint = (await readCheckpoint(data_dir))!;
  assert.ok(
    checkpoint.seq >= 10 && checkpoint.seq < 26,
    `a checkpoint was taken mid-way (seq ${checkpoint.seq})`,
  );
  // Simulate a crash: drop the store without close (no final checkpoint).
  (store as any).checkpoint_timer && clearInterval((store as any).checkpoint_timer);
  (store as any).releaseLock();
  const reopened = await Store.open(data_dir);
  assert.equal(balanceMicros(reopened.state, 'a'), 25_000_000);
  assert.equal(reopened.state.seq, 26);
  await reopened.close();
  assert.equal((await verifyDataDir(data_dir)).ok, true);
});

test('concurrent commits share fsyncs (group commit), and each resolves only when durable', async () => {
  const data_dir = dir();
  const store = await Store.open(data_dir);
  await store.transact((tx) => {
    tx.set('accounts', 'a', account('a'));
    creditWallet(tx, {
      account_id: 'a',
      amount_micros: 1_000_000_000,
      from: FUNDING_TOPUP,
      memo: 'top-up',
    });
  });
  const before = store.commit_groups;
  await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      store.transact((tx) =>
        debitWallet(tx, { account_id: 'a', amount_micros: 1000, to: 'revenue:x', memo: `d${i}` }),
      ),
    ),
  );
  const groups = store.commit_groups - before;
  assert.ok(groups < 50, `200 commits took ${groups} fsync groups`);
  const lines = readFileSync(listSegments(join(data_dir, 'journal'))[0]!.file, 'utf8')
    .trim()
    .split('\n');
  assert.equal(lines.length, 201);
  await store.close();
});

test('a corrupt checkpoint is refused with the file and line; the store never starts empty over it', async () => {
  const data_dir = dir();
  const store = await Store.open(data_dir);
  await store.transact((tx) => tx.set('accounts', 'a', account('a')));
  await store.close();
  const file = join(data_dir, 'state.jsonl');
  writeFileSync(
    file,
    '{"format":"aihub-state","version":2,"seq":1,"meta":{}}\n["b","x",1]\n["r","accounts",oops\n',
  );
  await assert.rejects(Store.open(data_dir), (error: Error) => {
    assert.ok(error instanceof CorruptStoreError);
    assert.match(error.message, /state\.jsonl line 3/);
    return true;
  });
  assert.match(readFileSync(file, 'utf8'), /oops/, 'the damaged file is left as it was');
});

test('a corrupt journal line in the middle is refused with file and line', async () => {
  const data_dir = dir();
  const store = await Store.open(data_dir);
  for (let i = 0; i < 3; i++)
    await store.transact((tx) => tx.set('accounts', `a${i}`, account(`a${i}`)));
  (store as any).releaseLock();
  const segment = listSegments(join(data_dir, 'journal'))[0]!.file;
  const lines = readFileSync(segment, 'utf8').split('\n');
  lines[1] = `${lines[1]!.slice(0, 20)}GARBAGE`;
  writeFileSync(segment, lines.join('\n'));
  await assert.rejects(Store.open(data_dir), /journal .*000000000001\.jsonl line 2/);
  await assert.rejects(verifyDataDir(data_dir), /line 2/);
});

test('a torn last journal line is dropped, said out loud, and the store goes on', async () => {
  const data_dir = dir();
  const store = await Store.open(data_dir);
  for (let i = 0; i < 3; i++)
    await store.transact((tx) => tx.set('accounts', `a${i}`, account(`a${i}`)));
  (store as any).releaseLock();
  const segment = listSegments(join(data_dir, 'journal'))[0]!.file;
  appendFileSync(segment, '{"s":4,"t":"2026-01-01T00:00:00.000Z","ops":[{"o":"set","t":"acc');
  const warnings: string[] = [];
  const reopened = await Store.open(data_dir, { warn: (message) => warnings.push(message) });
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /torn last journal line .*line 4/);
  assert.equal(reopened.state.seq, 3);
  await reopened.transact((tx) => tx.set('accounts', 'a3', account('a3')));
  await reopened.close();
  const again = await Store.open(data_dir);
  assert.ok(again.get('accounts', 'a3'));
  assert.equal(again.state.seq, 4);
  await again.close();
  assert.equal((await verifyDataDir(data_dir)).ok, true);
});

test('journal segments rotate and replay across them', async () => {
  const data_dir = dir();
  const store = await Store.open(data_dir, {
    segment_bytes: 4096,
    checkpoint_every_records: 1_000_000,
  });
  await store.transact((tx) => tx.set('accounts', 'a', account('a')));
  for (let i = 0; i < 100; i++) {
    await store.transact((tx) =>
      creditWallet(tx, { account_id: 'a', amount_micros: 10, from: FUNDING_TOPUP, memo: `c${i}` }),
    );
  }
  (store as any).releaseLock();
  assert.ok(listSegments(join(data_dir, 'journal')).length > 3);
  const reopened = await Store.open(data_dir);
  assert.equal(balanceMicros(reopened.state, 'a'), 1000);
  await reopened.close();
  assert.equal((await verifyDataDir(data_dir)).ok, true);
});

test('verify catches a checkpoint whose balances do not match the postings', async () => {
  const data_dir = dir();
  const store = await Store.open(data_dir);
  await store.transact((tx) => {
    tx.set('accounts', 'a', account('a'));
    creditWallet(tx, {
      account_id: 'a',
      amount_micros: 7_000_000,
      from: FUNDING_TOPUP,
      memo: 'top-up',
    });
  });
  await store.close();
  const file = join(data_dir, 'state.jsonl');
  writeFileSync(
    file,
    readFileSync(file, 'utf8').replace('["b","wallet:a",7000000]', '["b","wallet:a",8000000]'),
  );
  const report = await verifyDataDir(data_dir);
  assert.equal(report.ok, false);
  assert.ok(report.breaches.some((b) => /does not sum to zero/.test(b)));
  assert.ok(
    report.breaches.some((b) => /wallet:a is 8000000 but its postings replay to 7000000/.test(b)),
  );
});

test('under sustained writes, reads still resolve and checkpoints still happen', async () => {
  const data_dir = dir();
  const store = await Store.open(data_dir, { checkpoint_every_records: 200 });
  await store.transact((tx) =>
    creditWallet(tx, { account_id: 'a', amount_micros: 1e12, from: FUNDING_TOPUP, memo: 'top-up' }),
  );
  let running = true;
  const writers = Array.from({ length: 8 }, async () => {
    while (running)
      await store.transact((tx) =>
        debitWallet(tx, { account_id: 'a', amount_micros: 1, to: 'revenue:x', memo: 'load' }),
      );
  });
  for (let i = 0; i < 20; i++) {
    const seq_seen = store.state.seq;
    await store.transact(() => undefined); // a read: must not wait for the writers to stop
    assert.ok(store.state.seq >= seq_seen);
  }
  while (store.state.seq < 2000) await new Promise((resolve) => setTimeout(resolve, 5));
  running = false;
  await Promise.all(writers);
  const checkpoint = (await readCheckpoint(data_dir))!;
  assert.ok(
    checkpoint.seq >= 200,
    `a checkpoint was written during the load (seq ${checkpoint.seq})`,
  );
  await store.close();
  assert.equal((await verifyDataDir(data_dir)).ok, true);
});

test('a checkpoint is written in parts while commits go on, and checkpoint + journal replay gives exactly the live state', async () => {
  const data_dir = dir();
  const store = await Store.open(data_dir, {
    checkpoint_every_records: 1_000_000,
    checkpoint_interval_ms: 3_600_000,
    checkpoint_part_chars: 2_000,
  });
  await store.transact((tx) =>
    creditWallet(tx, { account_id: 'a', amount_micros: 1e12, from: FUNDING_TOPUP, memo: 'top-up' }),
  );
  for (let batch = 0; batch < 20; batch++) {
    await store.transact((tx) => {
      for (let i = 0; i < 100; i++)
        tx.set('accounts', `acc-${batch * 100 + i}`, account(`acc-${batch * 100 + i}`));
    });
  }
  const usage = (n: number) => ({
    type: 'usage',
    ts: '2026-01-01T00:00:00.000Z',
    account_id: 'a',
    prompt_tokens: n,
    completion_tokens: 1,
    cost_micros: n,
  });
  // The usage totals table comes after the accounts in the document, so written row by row it would be written late.
  await store.transact((tx) => tx.history(usage(1)));
  // Start a checkpoint, and keep changing every kind of state while it is being written:
  // rows rewritten, deleted, deleted and re-created, added; balances and usage totals.
  (store as any).maybeCheckpoint(true);
  const writing: Promise<void> = (store as any).checkpointing;
  assert.ok(writing, 'a checkpoint started');
  const seq_before = store.state.seq;
  let done = false;
  void writing.then(() => (done = true));
  let commits_meanwhile = 0;
  for (let round = 0; !done; round++) {
    await store.transact((tx) => {
      const id = `acc-${(round * 37) % 2000}`;
      if (round % 5 === 0) tx.del('accounts', id);
      else tx.set('accounts', id, { ...account(id), name: `renamed in round ${round}` });
      if (round % 7 === 0) tx.set('accounts', `new-${round}`, account(`new-${round}`));
      debitWallet(tx, {
        account_id: 'a',
        amount_micros: 1_000 + round,
        to: 'revenue:x',
        memo: `r${round}`,
      });
      tx.history(usage(round));
    });
    commits_meanwhile++;
  }
  await writing;
  // How many commits fit in depends on the disk and the load; one is enough to exercise replay over a checkpoint written in parts.
  assert.ok(
    commits_meanwhile >= 1,
    `requests ran while the checkpoint was written (${commits_meanwhile} commits)`,
  );
  const checkpoint = (await readCheckpoint(data_dir))!;
  assert.ok(
    checkpoint.seq >= seq_before && checkpoint.seq < store.state.seq,
    `the checkpoint (seq ${checkpoint.seq}) is of a record before the last (${store.state.seq})`,
  );
  // A crash now: a fresh load is the checkpoint plus the journal after it.
  const live = JSON.parse(JSON.stringify(store.state));
  const { loadState } = await import('../../../gateway/store/store.ts');
  const { state: loaded } = await loadState(data_dir, { repair: false, now: () => new Date() });
  assert.deepEqual(JSON.parse(JSON.stringify(loaded)), live);
  assert.equal((await verifyDataDir(data_dir)).ok, true);
  await store.close();
  const reopened = await Store.open(data_dir);
  assert.deepEqual(JSON.parse(JSON.stringify(reopened.state)), live);
  await reopened.close();
});

test('by count, a checkpoint waits until the journal has grown by half the last checkpoint', async () => {
  const data_dir = dir();
  const store = await Store.open(data_dir, {
    checkpoint_every_records: 10,
    checkpoint_interval_ms: 3_600_000,
  });
  // A large document: about 200 kB.
  await store.transact((tx) => {
    for (let i = 0; i < 1_000; i++) tx.set('accounts', `acc-${i}`, account(`acc-${i}`));
  });
  await store.transact((tx) =>
    creditWallet(tx, { account_id: 'a', amount_micros: 1e12, from: FUNDING_TOPUP, memo: 'top-up' }),
  );
  await (store as any).checkpointing;
  const first = store.checkpoints;
  assert.equal(first, 0, 'no checkpoint below 10 records');
  for (let i = 0; i < 10; i++)
    await store.transact((tx) =>
      debitWallet(tx, { account_id: 'a', amount_micros: 1, to: 'revenue:x', memo: `d${i}` }),
    );
  await (store as any).checkpointing;
  assert.equal(store.checkpoints, 1, 'the first one comes by count');
  const size = readFileSync(join(data_dir, 'state.jsonl'), 'utf8').length;
  // 40 small records are far less journal than half the document: no checkpoint by count.
  for (let i = 0; i < 40; i++)
    await store.transact((tx) =>
      debitWallet(tx, { account_id: 'a', amount_micros: 1, to: 'revenue:x', memo: `e${i}` }),
    );
  await (store as any).checkpointing;
  assert.equal(store.checkpoints, 1);
  // Rewriting most of the document's rows grows the journal past half its size: now one comes.
  for (let i = 0; i < 1_000; i += 100) {
    await store.transact((tx) => {
      for (let j = i; j < i + 100; j++)
        tx.set('accounts', `acc-${j}`, { ...account(`acc-${j}`), name: 'x'.repeat(20) });
    });
  }
  await store.transact((tx) =>
    debitWallet(tx, { account_id: 'a', amount_micros: 1, to: 'revenue:x', memo: 'last' }),
  );
  await (store as any).checkpointing;
  assert.equal(
    store.checkpoints,
    2,
    `a second checkpoint after more than ${size / 2} characters of journal`,
  );
  await store.close();
  assert.equal((await verifyDataDir(data_dir)).ok, true);
});

test('indexBy: ids by a field, built from the table, kept in step with set, re-key, del and rollback', async () => {
  const data_dir = dir();
  const store = await Store.open(data_dir);
  const key = (id: string, account_id: string) => ({
    id,
    account_id,
    hash: id,
    prefix: id,
    name: id,
    created_at: '2026-01-01T00:00:00.000Z',
    revoked_at: null,
  });
  await store.transact((tx) => {
    tx.set('keys', 'k1', key('k1', 'a'));
    tx.set('keys', 'k2', key('k2', 'b'));
    tx.set('keys', 'k3', key('k3', 'a'));
  });
  const index = store.indexBy('keys', 'account_id');
  assert.equal(store.indexBy('keys', 'account_id'), index, 'one index per table and field');
  assert.deepEqual([...index.ids('a')], ['k1', 'k3']);
  assert.deepEqual(
    [...index.rows('b')].map((k) => k.id),
    ['k2'],
  );
  assert.deepEqual([...index.ids('nobody')], []);
  await store.transact((tx) => {
    tx.set('keys', 'k4', key('k4', 'a')); // new
    tx.set('keys', 'k1', { ...key('k1', 'a'), name: 'renamed' }); // same key: stays in place
    tx.set('keys', 'k2', key('k2', 'a')); // re-keyed
    tx.del('keys', 'k3');
  });
  assert.deepEqual([...index.ids('a')], ['k1', 'k4', 'k2']);
  assert.deepEqual([...index.ids('b')], []);
  await assert.rejects(
    store.transact((tx) => {
      tx.del('keys', 'k1');
      tx.set('keys', 'k5', key('k5', 'b'));
      tx.set('keys', 'k2', key('k2', 'b'));
      throw new Error('rolled back');
    }),
    /rolled back/,
  );
  assert.deepEqual(
    new Set(index.ids('a')),
    new Set(['k1', 'k4', 'k2']),
    'a rollback undoes the index too',
  );
  assert.deepEqual([...index.ids('b')], []);
  await store.close();
  const reopened = await Store.open(data_dir);
  assert.deepEqual(
    new Set(reopened.indexBy('keys', 'account_id').ids('a')),
    new Set(['k1', 'k4', 'k2']),
  );
  await reopened.close();
});

test('a checkpoint that cannot be written is reported and tried again; the store goes on', async () => {
  const data_dir = dir();
  const warnings: string[] = [];
  const store = await Store.open(data_dir, {
    checkpoint_every_records: 5,
    checkpoint_interval_ms: 3_600_000,
    warn: (message) => warnings.push(message),
  });
  await store.transact((tx) =>
    creditWallet(tx, { account_id: 'a', amount_micros: 1e9, from: FUNDING_TOPUP, memo: 'top-up' }),
  );
  const { mkdirSync, rmdirSync } = await import('node:fs');
  mkdirSync(join(data_dir, 'state.jsonl')); // the checkpoint cannot be renamed into place
  for (let i = 0; i < 5; i++)
    await store.transact((tx) =>
      debitWallet(tx, { account_id: 'a', amount_micros: 1, to: 'revenue:x', memo: `d${i}` }),
    );
  await (store as any).checkpointing;
  assert.equal(store.checkpoints, 0);
  assert.match(
    warnings.join('\n'),
    /could not write the checkpoint .*the journal holds everything/,
  );
  await store.transact((tx) =>
    debitWallet(tx, { account_id: 'a', amount_micros: 1, to: 'revenue:x', memo: 'still works' }),
  );
  await (store as any).checkpointing; // that commit may have tried again: let it fail too
  assert.equal(store.checkpoints, 0);
  assert.deepEqual(
    readdirSync(data_dir).filter((name) => name.endsWith('.tmp')),
    [],
    'the failed write left no temp file',
  );
  rmdirSync(join(data_dir, 'state.jsonl'));
  for (let i = 0; i < 5; i++)
    await store.transact((tx) =>
      debitWallet(tx, { account_id: 'a', amount_micros: 1, to: 'revenue:x', memo: `e${i}` }),
    );
  await (store as any).checkpointing;
  assert.equal(store.checkpoints, 1, 'the next trigger writes it');
  await store.close();
  const reopened = await Store.open(data_dir);
  assert.equal(balanceMicros(reopened.state, 'a'), 1e9 - 11);
  await reopened.close();
});

test('indexBy: a new index cannot be built inside a transaction; an existing one can be read there', async () => {
  const store = await Store.open(dir());
  await assert.rejects(
    store.transact(() => store.indexBy('keys', 'account_id')),
    /build it at start-up/,
  );
  const index = store.indexBy('keys', 'account_id');
  await store.transact((tx) => {
    tx.set('keys', 'k1', {
      id: 'k1',
      account_id: 'a',
      hash: 'h',
      prefix: 'p',
      name: 'n',
      created_at: '2026-01-01T00:00:00.000Z',
      revoked_at: null,
    });
    assert.deepEqual(
      [...store.indexBy('keys', 'account_id').ids('a')],
      ['k1'],
      'the transaction sees its own change',
    );
  });
  assert.deepEqual([...index.ids('a')], ['k1']);
  await store.close();
});

test('row order: ids in creation order, each once, through delete, re-create, rollback and compaction; checkpoints use it', async () => {
  const data_dir = dir();
  const store = await Store.open(data_dir, {
    checkpoint_every_records: 1_000_000,
    checkpoint_interval_ms: 3_600_000,
  });
  const order = () => (store as any).orders.get('accounts') as { ids: string[]; dead: Set<string> };
  await store.transact((tx) => {
    for (let i = 0; i < 3_000; i++) tx.set('accounts', `acc-${i}`, account(`acc-${i}`));
  });
  await store.transact((tx) => {
    tx.del('accounts', 'acc-1');
    tx.set('accounts', 'acc-2', { ...account('acc-2'), name: 'rewritten' });
  });
  await store.transact((tx) => tx.set('accounts', 'acc-1', account('acc-1'))); // re-created: revived in place
  await assert.rejects(
    store.transact((tx) => {
      tx.set('accounts', 'rolled-back', account('rolled-back'));
      tx.del('accounts', 'acc-3');
      throw new Error('no');
    }),
  );
  assert.deepEqual(order().ids.slice(0, 4), ['acc-0', 'acc-1', 'acc-2', 'acc-3']);
  assert.equal(new Set(order().ids).size, order().ids.length, 'no id twice');
  assert.deepEqual([...order().dead], ['rolled-back'], 'only the rolled-back row is dead');
  await store.transact((tx) => tx.set('accounts', 'rolled-back', account('rolled-back')));
  assert.equal(order().dead.size, 0);
  assert.equal(order().ids.filter((id) => id === 'rolled-back').length, 1);
  // Deleting two thirds: the next checkpoint drops the dead ids first.
  await store.transact((tx) => {
    for (let i = 1_000; i < 3_000; i++) tx.del('accounts', `acc-${i}`);
  });
  assert.equal(order().ids.length, 3_001);
  (store as any).maybeCheckpoint(true);
  await (store as any).checkpointing;
  assert.equal(order().ids.length, 1_001);
  assert.equal(order().dead.size, 0);
  const checkpoint = (await readCheckpoint(data_dir))!;
  assert.equal(Object.keys(checkpoint.tables.accounts!).length, 1_001);
  assert.deepEqual(
    Object.keys(checkpoint.tables.accounts!),
    order().ids,
    'the checkpoint lists rows in creation order',
  );
  await store.close();
  const reopened = await Store.open(data_dir);
  assert.deepEqual(
    (reopened as any).orders.get('accounts').ids,
    order().ids,
    'rebuilt from the document at open',
  );
  await reopened.close();
});
