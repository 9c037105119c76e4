// `aihub-gateway migrate --from-data-dir D --database-url URL` (issue #18): a JSON-file store
// with payments, chat history and a dashboard session moves into PostgreSQL; both sides
// verify and agree; and a gateway on the database serves the same wallet, transactions,
// usage and session as the JSON-file gateway did.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { admin, request, runCli } from './helpers.ts';
import {
  onboard,
  startPaymentsGateway,
  paymentsConfig,
  waitFinal,
} from '../support/payments-helpers.ts';
import {
  dashboardLogin,
  dashboardPage,
  freshDatabase,
  postgresStoreMissing,
  startMember,
  verifyDatabase,
} from '../support/multi-gateway.ts';

const skip = await postgresStoreMissing();

/** The hex key of a data dir's encryption.key (the first key seals), for the gateways on the database. */
function dataDirKey(data_dir: string): string {
  const key = readFileSync(join(data_dir, 'encryption.key'), 'utf8')
    .split('\n')
    .find((line) => /^[0-9a-f]{64}$/.test(line.trim()));
  assert.ok(key, 'the data dir has an encryption key');
  return key.trim();
}

test(
  'migrate a JSON-file store with payments, chat history and sessions into PostgreSQL: both verify and agree',
  { skip, timeout: 180_000 },
  async () => {
    // The JSON-file store, as an operator has it before the move.
    const json = await startPaymentsGateway(paymentsConfig(), { database_url: false });
    const email = `migrating-${process.pid}@example.com`;
    const password = 'correct horse battery';
    let before: { balance: number; txns: any; usage: any; history_total: number };
    let cookie: string;
    let key: string;
    let user_id: string;
    let payer: Awaited<ReturnType<typeof onboard>>;
    try {
      // Payments: a success, a decline (refunded), a pending one that settles.
      payer = await onboard(json, 500);
      for (const number of ['9876543210', '9876540001', '9876540002']) {
        const reply = await request(`${json.url}/api/recharge`, {
          headers: payer.headers,
          body: { operator_id: 1, number, amount: 25 },
        });
        assert.equal(reply.status, 200, JSON.stringify(reply.body));
        await waitFinal(json, payer.headers, reply.body.txn_id);
      }
      // A dashboard user with chat history: JSON and streamed, billed.
      const registered = await request(`${json.url}/api/register`, {
        body: { email, password, name: 'Moving User' },
      });
      assert.equal(registered.status, 201, JSON.stringify(registered.body));
      key = registered.body.data.api_key;
      user_id = registered.body.data.account_id;
      assert.equal(
        (
          await admin(json).post(`/admin/accounts/${user_id}/credit`, {
            amount: 250,
            reference: 'before-the-move',
          })
        ).status,
        200,
      );
      const client = new OpenAI({ baseURL: `${json.url}/v1`, apiKey: key, maxRetries: 0 });
      for (let i = 0; i < 4; i++) {
        const body = {
          model: 'service-ai-lite',
          messages: [{ role: 'user' as const, content: `question ${i}` }],
          max_tokens: 12,
        };
        if (i % 2)
          for await (const _chunk of await client.chat.completions.create({
            ...body,
            stream: true,
          }))
            void _chunk;
        else await client.chat.completions.create(body);
      }
      cookie = await dashboardLogin(json, email, password);
      assert.equal((await dashboardPage(json, '/wallet', cookie)).status, 200);
      const headers = payer.headers;
      before = {
        balance: (await request(`${json.url}/api/wallet/balance`, { headers })).body.data.balance,
        txns: (await request(`${json.url}/api/transactions?service=recharge`, { headers })).body
          .data,
        usage: (
          await request(`${json.url}/v1/balance`, { headers: { authorization: `Bearer ${key}` } })
        ).body.usage,
        history_total: (await request(`${json.url}/api/wallet/history`, { headers })).body.data
          .total,
      };
      assert.equal(before.txns.total, 3);
      assert.equal(before.usage.requests, 4);
    } finally {
      assert.equal(await json.stop(), 0);
    }

    const database_url = await freshDatabase();
    const migrated = await runCli([
      'migrate',
      '--from-data-dir',
      json.data_dir,
      '--database-url',
      database_url,
    ]);
    assert.equal(migrated.code, 0, migrated.stdout + migrated.stderr);
    const report = JSON.parse(migrated.stdout);
    assert.equal(report.ok, true);
    assert.deepEqual(report.differences, []);

    const json_verify = await runCli(['verify', '--data-dir', json.data_dir, '--full']);
    assert.equal(json_verify.code, 0, json_verify.stdout + json_verify.stderr);
    const db_verify = await verifyDatabase(database_url);
    assert.equal(db_verify.code, 0, db_verify.output);
    const file_report = JSON.parse(json_verify.stdout);
    for (const field of ['postings', 'accounts', 'open_holds'] as const)
      assert.equal(
        db_verify.report[field],
        file_report[field],
        `${field}: the database and the data dir agree`,
      );

    // A gateway on the database (its own new data dir, the old data dir's key) serves the same.
    const pg = await startMember(database_url, 1, {
      config: paymentsConfig(),
      admin_token: json.admin_token,
      env: { AIHUB_ENCRYPTION_KEY: dataDirKey(json.data_dir) },
    });
    const headers = payer.headers;
    try {
      assert.equal(
        (await request(`${pg.url}/api/wallet/balance`, { headers })).body.data.balance,
        before.balance,
      );
      assert.deepEqual(
        (await request(`${pg.url}/api/transactions?service=recharge`, { headers })).body.data,
        before.txns,
      );
      assert.deepEqual(
        (await request(`${pg.url}/v1/balance`, { headers: { authorization: `Bearer ${key}` } }))
          .body.usage,
        before.usage,
      );
      assert.equal(
        (await request(`${pg.url}/api/wallet/history`, { headers })).body.data.total,
        before.history_total,
      );
      const page = await dashboardPage(pg, '/wallet', cookie);
      assert.equal(page.status, 200, 'the dashboard session made before the move still works');
      assert.equal((await admin(pg).get(`/admin/accounts/${user_id}`)).body.email, email);
      // And it keeps working: a new recharge on the moved wallet.
      const after = await request(`${pg.url}/api/recharge`, {
        headers,
        body: { operator_id: 1, number: '9123456789', amount: 10 },
      });
      assert.equal(after.status, 200, JSON.stringify(after.body));
      assert.equal(after.body.data.status, 'success');
    } finally {
      assert.equal(await pg.stop(), 0);
    }
    const after_verify = await verifyDatabase(database_url);
    assert.equal(after_verify.code, 0, after_verify.output);
  },
);
