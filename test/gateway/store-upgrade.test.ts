// A data dir written by the store format before #12 (test/fixtures/v1-datadir: one
// state.json document, a journal with a tail after the checkpoint, made through the real
// gateway by test/fixtures/make-v1-datadir.ts) opens, is migrated on first start with
// nothing lost, and verifies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { request, runCli, runVerify, tempDir } from './helpers.ts';
import { copyFixtureDataDir } from '../support/temp.ts';
import {
  ledgerBalances,
  paymentsConfig,
  startPaymentsGateway,
} from '../support/payments-helpers.ts';

const FIXTURE = resolve(import.meta.dirname, '../fixtures/v1-datadir');

test(
  'a data dir of the previous format opens, is migrated on first start, loses nothing and verifies',
  { timeout: 120_000 },
  async () => {
    const data_dir = join(tempDir('aihub-upgrade-'), 'data');
    copyFixtureDataDir(FIXTURE, data_dir);
    const expected = JSON.parse(readFileSync(join(data_dir, 'EXPECTED.json'), 'utf8')) as {
      accounts: Record<'a' | 'b', { account_id: string; key: string }>;
      txns: string[];
    };
    assert.ok(
      existsSync(join(data_dir, 'state.json')) && !existsSync(join(data_dir, 'state.jsonl')),
      'the fixture is of the old format',
    );
    const before = await runVerify(data_dir);
    assert.equal(before.code, 0, `${before.stdout}${before.stderr}`);
    const balances = await ledgerBalances({ data_dir } as never);

    let gateway = await startPaymentsGateway(paymentsConfig(), { data_dir });
    try {
      assert.ok(
        !existsSync(join(data_dir, 'state.json')),
        'the old document is gone after the migration',
      );
      assert.ok(
        existsSync(join(data_dir, 'state.jsonl')) &&
          existsSync(join(data_dir, 'index', 'manifest.json')),
      );
      assert.ok(
        gateway.output.some((line) => line.includes('migrated')),
        'the migration is logged',
      );
      const seen = new Map<string, any>();
      for (const who of ['a', 'b'] as const) {
        const headers = { 'x-api-key': expected.accounts[who].key };
        const wallet = await request(`${gateway.url}/api/wallet/balance`, { headers });
        assert.equal(wallet.status, 200);
        assert.equal(
          Math.round(wallet.body.data.balance * 1e6),
          balances[`wallet:${expected.accounts[who].account_id}`],
          `account ${who}'s balance survived`,
        );
        const list = await request(`${gateway.url}/api/transactions?limit=100`, { headers });
        assert.equal(list.status, 200);
        for (const txn of list.body.data.transactions) seen.set(txn.txn_id, txn);
        const history = await request(`${gateway.url}/api/wallet/history?limit=100`, { headers });
        assert.equal(history.status, 200);
        assert.ok(history.body.data.total > 0, 'wallet history from the old journal');
        assert.equal(
          history.body.data.closing_balance,
          wallet.body.data.balance,
          'the wallet history ends at the balance',
        );
        const logs = await request(`${gateway.url}/api/reports/api-logs`, { headers });
        assert.equal(logs.status, 200);
        assert.ok(logs.body.data.total > 0, 'API logs from the old journal');
      }
      for (const txn_id of expected.txns) {
        assert.ok(seen.has(txn_id), `${txn_id} is listed`);
        const found = await request(`${gateway.url}/admin/transactions/${txn_id}`, {
          headers: { authorization: `Bearer ${gateway.admin_token}` },
        });
        assert.equal(found.status, 200, `${txn_id} is found by id`);
        assert.deepEqual(
          { ...found.body, account_id: undefined },
          { ...seen.get(txn_id), account_id: undefined },
          `${txn_id}: by id as in the list`,
        );
      }
      const audit = await request(`${gateway.url}/admin/audit`, {
        headers: { authorization: `Bearer ${gateway.admin_token}` },
      });
      assert.equal(audit.status, 200);
      assert.ok(audit.body.total > 0, 'the admin audit log from the old journal');
      // The old document's answered keys are history now (issue #26), and still answer: the
      // fixture's credit of 25 to b under `fixture-extra` is not made twice.
      const b = expected.accounts.b.account_id;
      const again = await request(`${gateway.url}/admin/accounts/${b}/credit`, {
        headers: { authorization: `Bearer ${gateway.admin_token}` },
        body: { amount: 25, reference: 'fixture-extra' },
      });
      assert.equal(again.status, 200, JSON.stringify(again.body));
      assert.equal(again.body.duplicate, true);
      assert.equal(Math.round(again.body.balance * 1e6), balances[`wallet:${b}`]);
    } finally {
      assert.equal(await gateway.stop(), 0);
    }
    const after = await runVerify(data_dir);
    assert.equal(after.code, 0, `${after.stdout}${after.stderr}`);
    assert.ok(
      !readFileSync(join(data_dir, 'state.jsonl'), 'utf8').includes('"idempotency"'),
      'no answered key in the new checkpoint',
    );
    const full = await runCli(['verify', '--data-dir', data_dir, '--full']);
    assert.equal(full.code, 0, `${full.stdout}${full.stderr}`);
    assert.equal(JSON.parse(full.stdout).mode, 'full');

    // The second start is an ordinary one, and answers the same.
    gateway = await startPaymentsGateway(paymentsConfig(), { data_dir });
    try {
      assert.ok(!gateway.output.some((line) => line.includes('migrated')));
      const list = await request(`${gateway.url}/api/transactions?limit=100`, {
        headers: { 'x-api-key': expected.accounts.a.key },
      });
      assert.equal(list.status, 200);
      assert.ok(
        expected.txns.filter((id) =>
          list.body.data.transactions.some((t: { txn_id: string }) => t.txn_id === id),
        ).length > 0,
      );
    } finally {
      assert.equal(await gateway.stop(), 0);
    }
  },
);
