// What a store refusal says about the request it answers, on the lean lane (/v1) of a
// PostgreSQL gateway (issue #40 moved the request's scope out of AsyncLocalStorage: the lean
// lane carries it explicitly). A chat whose hold committed and whose settlement the database
// then refused did change something (its hold, a lease that lapses): 503 store_unavailable
// that says the request was not completed, never "nothing was changed". A chat refused at its
// first write, and an admin call (the Express lane's implicit scope), did change nothing and
// say so. The database refuses the writes as it does when its own disk is full (an ERROR with
// SQLSTATE 53100 from a trigger the test puts on the table the write goes to): the statement
// is known not applied, so the text depends only on what the request committed before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admin, chatWith, createFundedAccount, request, type Gateway } from './helpers.ts';
import { waitFor } from '../support/payments-helpers.ts';
import pg from 'pg';
import { ScriptedUpstream } from '../support/scripted-upstream.ts';
import {
  freshDatabase,
  postgresStoreMissing,
  startMember,
  verifyDatabase,
} from '../support/multi-gateway.ts';

const skip = await postgresStoreMissing();

/** Makes PostgreSQL refuse writes to `table` (those `when` selects) as a full disk does. */
async function refuseWrites(db: pg.Client, table: string, when = 'true') {
  await db.query(`CREATE OR REPLACE FUNCTION aihub.test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$`);
  await db.query(
    `CREATE TRIGGER test_disk_full BEFORE INSERT OR UPDATE ON aihub.${table} FOR EACH ROW WHEN (${when}) EXECUTE FUNCTION aihub.test_disk_full()`,
  );
  return () => db.query(`DROP TRIGGER test_disk_full ON aihub.${table}`);
}

const chat = (gateway: Gateway, key: string, n: number) => chatWith(gateway, key, `scope ${n}`);

async function servedAgain(gateway: Gateway, key: string) {
  await waitFor(
    async () =>
      (
        await request(`${gateway.url}/v1/balance`, {
          headers: { authorization: `Bearer ${key}` },
        })
      ).status === 200,
    () => 'the gateway did not serve again',
    30_000,
  );
}

test(
  'a store refusal on /v1 says "nothing was changed" only when the request committed nothing',
  { skip, timeout: 180_000 },
  async () => {
    const database_url = await freshDatabase();
    const db = new pg.Client({ connectionString: database_url });
    await db.connect();
    const upstream = await ScriptedUpstream.start({ kind: 'ok', content: 'hello' });
    const gateway = await startMember(database_url, 1, {
      env: { SCRIPTED_KEY: 'sk-scripted' },
      config: {
        chat: {
          engines: {
            scripted: {
              type: 'openai-compatible',
              base_url: upstream.base_url,
              model: 'upstream-model',
              api_key_env: 'SCRIPTED_KEY',
              timeout_ms: 20_000,
            },
          },
          models: { 'service-ai-lite': { targets: ['scripted'] } },
        },
      },
    });
    try {
      const chatter = await createFundedAccount(gateway, 100);
      const target = await createFundedAccount(gateway, 0);
      assert.equal((await chat(gateway, chatter.key, 0)).status, 200);

      // 1. The hold commits, the upstream is called; the database refuses the settlement (its usage record).
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      upstream.script({ kind: 'wait', until: gate, then: { kind: 'ok', content: 'late' } });
      const before = upstream.received.length;
      const pending = chat(gateway, chatter.key, 1);
      await waitFor(
        () => upstream.received.length > before,
        () => 'the chat never reached the upstream',
        10_000,
      );
      const restore = await refuseWrites(db, 'history', "NEW.kind = 'usage'");
      release();
      const partly = await pending;
      assert.equal(partly.status, 503, JSON.stringify(partly.body));
      assert.equal(partly.body.error.code, 'store_unavailable');
      assert.doesNotMatch(partly.body.error.message, /nothing was changed/);
      assert.match(partly.body.error.message, /not completed/);
      await restore();

      // 2. Refused at its first write (the hold): nothing was changed, and it says so; so does
      // an admin credit (the Express lane).
      const restore_rows = await refuseWrites(db, 'rows');
      const refused = await chat(gateway, chatter.key, 2);
      assert.equal(refused.status, 503, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, 'store_unavailable');
      assert.match(refused.body.error.message, /nothing was changed/);
      const credit = await admin(gateway).post(`/admin/accounts/${target.account_id}/credit`, {
        amount: 1,
        reference: 'scope-credit',
      });
      assert.equal(credit.status, 503, JSON.stringify(credit.body));
      assert.match(credit.body.error.message, /nothing was changed/);
      await restore_rows();
      await servedAgain(gateway, chatter.key);

      // Served again; the first chat billed once, the refused ones not at all.
      assert.equal((await chat(gateway, chatter.key, 3)).status, 200);
      const balance = await request(`${gateway.url}/v1/balance`, {
        headers: { authorization: `Bearer ${chatter.key}` },
      });
      assert.equal(balance.body.usage.requests, 2, JSON.stringify(balance.body));
    } finally {
      assert.equal(await gateway.stop(), 0);
      await Promise.all([db.end(), upstream.close()]);
    }
    const verify = await verifyDatabase(database_url);
    assert.equal(verify.code, 0, verify.output);
  },
);
