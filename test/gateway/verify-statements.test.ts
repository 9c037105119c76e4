// `aihub-gateway verify` names a statement that does not equal the ledger (issue #35): books
// whose every balance replays exactly, but where one account's month holds a posting that
// moved commission:* and tds:194h without touching its wallet (no statement lists it: the
// statements read the account's wallet postings) and a commission whose own record (the
// figures its transaction and receipt show) says another TDS than it withheld. Run with the
// real command on the JSON-file store, and, in a run with AIHUB_TEST_DATABASE_URL, on the
// PostgreSQL store.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { creditWallet } from '../../gateway/ledger/ledger.ts';
import { Store } from '../../gateway/store/store.ts';
import type { Tx } from '../../gateway/store/types.ts';
import { PgStore } from '../../gateway/store/pg/store.ts';
import { runCli, tempDir, testDatabaseFor } from './helpers.ts';
import { PAYMENT_HISTORY_TAGS } from '../../gateway/payments/history-tags.ts';

const ACCOUNT = 'acc_statement_drift';

/** A clean commission, then the two drifts, in February 2025 (IST). */
function business(tx: Tx, stage: 'clean' | 'drift'): void {
  if (stage === 'clean') {
    creditWallet(tx, {
      account_id: ACCOUNT,
      amount_micros: 1_900_000,
      from: 'commission:recharge',
      withheld: [['tds:194h', 100_000]],
      memo: 'recharge commission txn_clean',
      ref: 'txn_clean',
      meta: { kind: 'commission', gross_micros: 2_000_000, tds_micros: 100_000 },
    });
    return;
  }
  tx.post({
    id: 'pst_no_wallet',
    ts: tx.now.toISOString(),
    memo: 'a TDS no statement shows',
    account_id: ACCOUNT,
    entries: [
      ['commission:recharge', -500_000],
      ['tds:194h', 500_000],
    ],
  });
  creditWallet(tx, {
    account_id: ACCOUNT,
    amount_micros: 2_800_000,
    from: 'commission:recharge',
    withheld: [['tds:194h', 200_000]],
    memo: 'recharge commission txn_meta',
    ref: 'txn_meta',
    meta: { kind: 'commission', gross_micros: 3_000_000, tds_micros: 150_000 },
  });
}

const NOW = () => new Date('2025-02-10T06:00:00Z');

function assertNamed(verify: { code: number | null; stdout: string; stderr: string }): void {
  assert.equal(verify.code, 1, verify.stdout + verify.stderr);
  const breaches = (JSON.parse(verify.stdout) as { breaches: string[] }).breaches;
  assert.ok(
    breaches.includes(
      `commission statement TDS of ${ACCOUNT} for 2025-02: 0.30, but its postings moved tds:194h by 0.80`,
    ),
    breaches.join('\n'),
  );
  assert.ok(
    breaches.some(
      (b) =>
        b.startsWith(`commission statement gross of ${ACCOUNT} for 2025-02: 5.00`) &&
        b.endsWith('5.50'),
    ),
    breaches.join('\n'),
  );
  assert.ok(
    breaches.some(
      (b) =>
        b.includes('txn_meta') &&
        b.includes('says gross 3.00, TDS 0.15, but moved gross 3.00, TDS 0.20'),
    ),
    breaches.join('\n'),
  );
}

test('verify (JSON-file store): a statement off the ledger is named, account and month', async () => {
  const data_dir = tempDir('aihub-verify-stmt-');
  const store = await Store.open(data_dir, { history_tags: PAYMENT_HISTORY_TAGS, now: NOW });
  await store.transact((tx) => business(tx, 'clean'));
  await store.close();
  const clean = await runCli(['verify', '--data-dir', data_dir]);
  assert.equal(clean.code, 0, clean.stdout + clean.stderr);

  const again = await Store.open(data_dir, { history_tags: PAYMENT_HISTORY_TAGS, now: NOW });
  await again.transact((tx) => business(tx, 'drift'));
  await again.close();
  // The ledger itself is sound: only the statements' check finds it.
  assertNamed(await runCli(['verify', '--data-dir', data_dir, '--full']));
});

test('verify (PostgreSQL store): a statement off the ledger is named, account and month', async (t) => {
  const database = testDatabaseFor(tempDir('aihub-verify-stmt-pg-'));
  if (!database) {
    t.skip('no AIHUB_TEST_DATABASE_URL: the PostgreSQL pass runs it');
    return;
  }
  const url = await database;
  const store = await PgStore.open(url, { history_tags: PAYMENT_HISTORY_TAGS, now: NOW });
  try {
    await store.transact((tx) => business(tx, 'clean'));
    const clean = await runCli(['verify', '--database-url', url]);
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
    await store.transact((tx) => business(tx, 'drift'));
  } finally {
    await store.close();
  }
  assertNamed(await runCli(['verify', '--database-url', url]));
});
