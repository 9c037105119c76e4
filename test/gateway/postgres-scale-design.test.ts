// The design of issue #30 seen from outside, by counts (/metrics), not by timing: real gateway
// processes on one PostgreSQL database.
// - A gateway serves without applying what the others write: while one gateway bills chats
//   and credits wallets, another's aihub_store_foreign_records_applied_total stays 0 and its
//   cache loads nothing; asked for a balance afterwards, it loads that wallet and answers the
//   current figure.
// - A new gateway on a database with a large history (1,000,000 usage records and 100,000
//   wallet lines by default; AIHUB_TEST_PG_HISTORY) starts and answers /v1/balance after
//   reading a handful of rows (aihub_store_rows_loaded_total), not the history.
// - A recharge costs 3 statements at one connection (aihub_store_statements_total{kind}).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { admin, createFundedAccount, request, type Gateway } from './helpers.ts';
import {
  freshDatabase,
  micros,
  postgresStoreMissing,
  startGateways,
  startMember,
  stopAll,
  verifyDatabase,
} from '../support/multi-gateway.ts';
import { onboard, paymentsConfig } from '../support/payments-helpers.ts';

const skip = await postgresStoreMissing();
const HISTORY = Number(process.env.AIHUB_TEST_PG_HISTORY ?? 1_000_000);

/** One counter of a gateway's /metrics (summed over its labels). */
async function metric(gateway: Gateway, name: string): Promise<number> {
  const text = await (await fetch(`${gateway.url}/metrics`)).text();
  let sum = 0;
  let found = false;
  for (const [, value] of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, 'gm'))) {
    sum += Number(value);
    found = true;
  }
  assert.ok(found, `${name} is in /metrics`);
  return sum;
}

async function balanceOn(gateway: Gateway, key: string): Promise<number> {
  const reply = await request(`${gateway.url}/v1/balance`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return micros(reply.body.balance);
}

test(
  'a gateway applies none of the records another gateway commits while serving (the metric is 0) and loads nothing until asked',
  { skip, timeout: 180_000 },
  async (t) => {
    const database_url = await freshDatabase();
    const gateways = await startGateways(database_url, 2);
    const [g1, g2] = gateways as [Gateway, Gateway];
    try {
      const account = await createFundedAccount(g1, 100);
      // g2 serves this account once: its key and wallet are in g2's cache.
      const start = await balanceOn(g2, account.key);
      const loaded_before = await metric(g2, 'aihub_store_rows_loaded_total');
      const loads_before = await metric(g2, 'aihub_store_loads_total');
      // g1 bills 40 chats and credits 20 other accounts meanwhile.
      const billed = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          request(`${g1.url}/v1/chat/completions`, {
            headers: { authorization: `Bearer ${account.key}` },
            body: {
              model: 'service-ai-lite',
              messages: [{ role: 'user', content: `hello ${i}` }],
              max_tokens: 8,
            },
          }),
        ),
      );
      for (const reply of billed) assert.equal(reply.status, 200, JSON.stringify(reply.body));
      for (let i = 0; i < 20; i++) await createFundedAccount(g1, 1);
      assert.equal(await metric(g2, 'aihub_store_foreign_records_applied_total'), 0);
      assert.equal(
        await metric(g2, 'aihub_store_rows_loaded_total'),
        loaded_before,
        'g2 read nothing of what g1 wrote',
      );
      assert.equal(await metric(g2, 'aihub_store_loads_total'), loads_before);
      // Asked, g2 answers the balance as g1 left it, loading that wallet only.
      const after = await balanceOn(g2, account.key);
      assert.ok(after < start, `${after} < ${start}: g2 sees g1's charges`);
      assert.equal(after, await balanceOn(g1, account.key));
      const rows_read = (await metric(g2, 'aihub_store_rows_loaded_total')) - loaded_before;
      assert.ok(rows_read <= 10, `g2 read ${rows_read} rows to answer one balance`);
      t.diagnostic(
        `g2 applied 0 records, loaded 0 rows while g1 committed; ${rows_read} to answer`,
      );
      assert.equal(
        micros((await admin(g2).get(`/admin/accounts/${account.account_id}`)).body.balance),
        after,
      );
    } finally {
      await stopAll(gateways);
    }
    const verify = await verifyDatabase(database_url);
    assert.equal(verify.code, 0, verify.output);
  },
);

test(
  `a new gateway on a database with ${HISTORY} history records answers /v1/balance after reading a bounded number of rows`,
  { skip, timeout: 600_000 },
  async (t) => {
    const database_url = await freshDatabase();
    const [seed] = await startGateways(database_url, 1);
    const account = await createFundedAccount(seed!, 50);
    const expected = await balanceOn(seed!, account.key);
    await stopAll([seed!]);
    // The history a busy deployment leaves (usage records, wallet lines of other accounts),
    // written in bulk as the commit statement writes it.
    const client = new pg.Client({ connectionString: database_url });
    await client.connect();
    try {
      await client.query(
        `INSERT INTO aihub.history (kind, at, account_id, key_id, aux, aux2, label, record)
         SELECT 'usage', now(), 'acc_h' || (i % 5000), 'key_h' || (i % 5000), 1, 2, 'standard',
           json_build_object('type', 'usage', 'ts', now(), 'account_id', 'acc_h' || (i % 5000), 'cost_micros', 1)
         FROM generate_series(1, $1::int) i`,
        [HISTORY],
      );
      await client.query(
        `INSERT INTO aihub.wallet_lines (account_id, at, posting_id, delta, balance, posting)
         SELECT 'acc_h' || i, now(), 'pst_h' || i, 0, 0, '{}'::json FROM generate_series(1, $1::int) i`,
        [Math.ceil(HISTORY / 10)],
      );
      await client.query('ANALYZE');
    } finally {
      await client.end();
    }
    const fresh = await startMember(database_url, 7);
    try {
      const at_start = await metric(fresh, 'aihub_store_rows_loaded_total');
      assert.equal(await balanceOn(fresh, account.key), expected);
      const rows = await metric(fresh, 'aihub_store_rows_loaded_total');
      assert.ok(
        rows <= 20,
        `the new gateway read ${rows} rows (${at_start} at start) to answer a balance after ${HISTORY} history records`,
      );
      assert.equal(await metric(fresh, 'aihub_store_foreign_records_applied_total'), 0);
      t.diagnostic(`rows read: ${at_start} to start, ${rows} after the first /v1/balance`);
    } finally {
      await stopAll([fresh]);
    }
  },
);

test(
  'the paths retailers, agents and operators take on a gateway that never saw the account load what they miss without stopping the event loop (0 blocking loads)',
  { skip, timeout: 180_000 },
  async (t) => {
    const database_url = await freshDatabase();
    const gateways = await startGateways(database_url, 2, { config: paymentsConfig() });
    const [g1, g2] = gateways as [Gateway, Gateway];
    try {
      // Everything about the account is written through g1: g2's cache holds none of it.
      const { key, headers } = await onboard(g1, 1_000);
      const first = await request(`${g1.url}/api/recharge`, {
        headers,
        body: { operator_id: 1, number: '9812345100', amount: 10 },
      });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const before = await metric(g2, 'aihub_store_blocking_loads_total');
      // g2: the balance an agent asks for, a recharge (its pricing reads: network row, scheme,
      // eKYC), the wallet report (each line's transaction), a transaction by id, a sign-up
      // (an account and its first key, whose index reads the new account's keys).
      assert.ok((await balanceOn(g2, key)) > 0);
      const recharge = await request(`${g2.url}/api/recharge`, {
        headers,
        body: { operator_id: 1, number: '9812345101', amount: 10 },
      });
      assert.equal(recharge.status, 200, JSON.stringify(recharge.body));
      const report = await request(`${g2.url}/api/reports/wallet?limit=50`, { headers });
      assert.equal(report.status, 200, JSON.stringify(report.body));
      assert.ok(
        report.body.data.rows.some((row: { service: string | null }) => row.service === 'recharge'),
        JSON.stringify(report.body.data.rows),
      );
      const txn = await admin(g2).get(`/admin/transactions/${first.body.data.txn_id}`);
      assert.equal(txn.status, 200, JSON.stringify(txn.body));
      const registered = await request(`${g2.url}/api/register`, {
        body: {
          email: `cold-${Date.now()}@example.com`,
          password: 'correct horse battery',
          name: 'Cold',
        },
      });
      assert.equal(registered.status, 201, JSON.stringify(registered.body));
      const blocking = (await metric(g2, 'aihub_store_blocking_loads_total')) - before;
      t.diagnostic(`blocking loads on g2: ${blocking}`);
      assert.equal(blocking, 0, 'a request path stopped the event loop for a load');
    } finally {
      await stopAll(gateways);
    }
  },
);

test(
  'a recharge on the happy path costs 3 statements at one connection: open with its first attempt, settle with its answer, its API-log record; no load (issue #30)',
  { skip, timeout: 120_000 },
  async () => {
    const database_url = await freshDatabase();
    const [gateway] = await startGateways(database_url, 1, {
      config: paymentsConfig({ tick_ms: 60_000 }),
    });
    const client = new pg.Client({ connectionString: database_url });
    await client.connect();
    /** Waits until the API-log records of these transactions are committed (each is its own commit, after its answer). */
    const logged = async (txn_ids: string[]) => {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const { rows } = await client.query<{ n: string }>(
          `SELECT count(*)::text AS n FROM aihub.history WHERE record->>'txn_id' = ANY($1)`,
          [txn_ids],
        );
        if (Number(rows[0]!.n) === txn_ids.length) return;
        assert.ok(Date.now() < deadline, `API-log records of ${txn_ids.join(', ')}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const recharge = async (i: number) => {
      const reply = await request(`${gateway!.url}/api/recharge`, {
        headers,
        body: { operator_id: 1, number: `98123${45_100 + i}`, amount: 10 },
      });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.equal(reply.body.data.status, 'success');
      return reply.body.txn_id as string;
    };
    const { headers } = await onboard(gateway!, 1_000);
    try {
      await logged([await recharge(0)]); // the account's rows are in the cache now
      const before = await statementsByKind(gateway!);
      const txn_ids: string[] = [];
      for (let i = 1; i <= 10; i++) txn_ids.push(await recharge(i));
      await logged(txn_ids);
      const after = await statementsByKind(gateway!);
      const sent: Record<string, number> = {};
      for (const [kind, n] of Object.entries(after))
        if (!['heartbeat', 'listen', 'prune', 'key_check', 'background'].includes(kind))
          if (n - (before[kind] ?? 0) > 0) sent[kind] = n - (before[kind] ?? 0);
      assert.deepEqual(sent, { commit: 30 }, 'statements of 10 recharges, by kind');
    } finally {
      await client.end();
      await stopAll([gateway!]);
    }
    assert.equal((await verifyDatabase(database_url)).code, 0);
  },
);

/** A gateway's aihub_store_statements_total by kind. */
async function statementsByKind(gateway: Gateway): Promise<Record<string, number>> {
  const text = await (await fetch(`${gateway.url}/metrics`)).text();
  const by_kind: Record<string, number> = {};
  for (const [, kind, value] of text.matchAll(
    /^aihub_store_statements_total\{kind="(\w+)"[^}]*\} (\d+)/gm,
  ))
    by_kind[kind!] = Number(value);
  return by_kind;
}
