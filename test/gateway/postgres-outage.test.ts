// PostgreSQL down (issue #36), as an operator meets it: `pg_ctl stop -m fast`, requests all
// the while, then started again. The log says it once when the outage starts, at most once
// per interval while it lasts, and once when it ends with its counts (lines counted by their
// `event` field, not their text), however many requests were refused; a chat or an embedding
// the store refused does not spend the key's rate limit (no 429 in the middle of the outage,
// the bucket full when it ends; embeddings run the chat's pipeline, issue #38); an admin call refused meanwhile is answered "nothing was
// changed" (known: the statement never reached a server) and its audit record is written
// once the database is back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admin, createFundedAccount, request, type Gateway } from './helpers.ts';
import { paymentsConfig, waitFor } from '../support/payments-helpers.ts';
import { metric, ownCluster, postgresStoreMissing, startMember } from '../support/multi-gateway.ts';

const skip = await postgresStoreMissing();
/** The key's limit: the chats refused during the outage are several times this. */
const PER_MINUTE = 10;
/** Past the interval of the outage's log lines (10 s): one line in between is expected. */
const OUTAGE_MS = 12_000;

const events = (gateway: Gateway, event: string) =>
  gateway.output
    .filter((line) => line.includes(`"event":"${event}"`))
    .map((line) => JSON.parse(line) as Record<string, number | string>);

test(
  'PostgreSQL down: one line as the outage starts and one as it ends with its counts, refused chats spend no rate limit, refused admin calls keep their audit record',
  { skip, timeout: 180_000 },
  async (t) => {
    const cluster = await ownCluster();
    const database_url = await cluster.createDatabase();
    const gateway = await startMember(database_url, 1, {
      config: { ...paymentsConfig(), chat: { rate_limit: { requests_per_minute: PER_MINUTE } } },
    });
    const chatter = await createFundedAccount(gateway, 100);
    const target = await createFundedAccount(gateway, 0);
    const chat = (n: number) =>
      request(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${chatter.key}` },
        body: {
          model: 'service-ai-lite',
          messages: [{ role: 'user', content: `hi ${n}` }],
          max_tokens: 4,
        },
      });
    const embed = (n: number) =>
      request(`${gateway.url}/v1/embeddings`, {
        method: 'POST',
        headers: { authorization: `Bearer ${chatter.key}` },
        body: { model: 'service-ai-lite', input: `hi ${n}` },
      });
    const warned_before = gateway.output.filter((line) => line.includes('"level":"warn"')).length;
    const statuses = new Map<number, number>();
    let refused_credit: { status: number; body: any; headers: Headers } | null = null;
    try {
      await cluster.stop('fast');
      const down_at = Date.now();
      let n = 0;
      while (Date.now() - down_at < OUTAGE_MS) {
        // Chats and embeddings in turn: neither spends the rate limit while the store refuses.
        const reply = n % 2 ? await embed(n++) : await chat(n++);
        statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
        if (n === 5)
          refused_credit = await admin(gateway).post(
            `/admin/accounts/${target.account_id}/credit`,
            { amount: 3, reference: 'during-outage' },
          );
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await cluster.start();
      // Served again: the first chat after the outage passes the rate limit.
      let after: Awaited<ReturnType<typeof chat>> | null = null;
      await waitFor(
        async () => {
          after = await chat(n++);
          return after.status !== 503;
        },
        () => 'the gateway did not serve again',
        60_000,
      );
      assert.equal(after!.status, 200, JSON.stringify(after!.body));
    } finally {
      await cluster.start().catch(() => {});
    }
    try {
      const refused = statuses.get(503) ?? 0;
      assert.ok(
        refused > 3 * PER_MINUTE,
        `chats refused during the outage: ${JSON.stringify([...statuses])}`,
      );
      assert.equal(
        statuses.get(429) ?? 0,
        0,
        'no chat or embedding the store refused spent the rate limit',
      );
      assert.deepEqual([...statuses.keys()], [503]);

      assert.equal(refused_credit!.status, 503, JSON.stringify(refused_credit!.body));
      assert.equal(refused_credit!.body.error.code, 'store_unavailable');
      assert.match(refused_credit!.body.error.message, /nothing was changed/);
      const request_id = refused_credit!.headers.get('x-request-id');

      // The log: one start, one end with its counts, one line in between (12 s of a 10 s interval).
      await waitFor(
        () => events(gateway, 'store_outage_ended').length > 0,
        () => 'no store_outage_ended line',
      );
      assert.equal(events(gateway, 'store_outage_started').length, 1);
      const ended = events(gateway, 'store_outage_ended');
      assert.equal(ended.length, 1);
      assert.ok(
        Number(ended[0]!.refused) >= refused,
        `the end line counts the refusals: ${JSON.stringify(ended[0])}`,
      );
      assert.ok(Number(ended[0]!.duration_ms) >= OUTAGE_MS - 1_000, JSON.stringify(ended[0]));
      assert.equal(await metric(gateway, 'aihub_store_outages_total'), 1);
      assert.ok((await metric(gateway, 'aihub_store_refused_total')) >= refused);
      const between = events(gateway, 'store_outage_continues').length;
      assert.ok(between >= 1 && between <= 2, `lines while it lasted: ${between}`);
      const warned =
        gateway.output.filter((line) => line.includes('"level":"warn"')).length - warned_before;
      assert.ok(warned <= 8, `${warned} warn lines for ${refused} refused requests`);
      t.diagnostic(
        `${refused} chats refused, ${warned} warn lines; the end line: ${JSON.stringify(ended[0])}`,
      );

      // The refused admin call's audit record, written once the store was back.
      let audit: any = null;
      await waitFor(
        async () => {
          audit = (await admin(gateway).get(`/admin/audit?account_id=${target.account_id}`)).body;
          return audit?.data?.some((record: any) => record.request_id === request_id);
        },
        () => `no audit record of ${request_id}: ${JSON.stringify(audit).slice(0, 800)}`,
        30_000,
      );
      const record = audit.data.find((r: any) => r.request_id === request_id);
      assert.equal(record.status, 503);
      assert.equal(events(gateway, 'audit_held').length, 1);
      assert.equal(events(gateway, 'audit_written').length, 1);
    } catch (error) {
      const lines = gateway.output.filter((line) => !line.includes('"msg":"request"'));
      throw new Error(
        `${(error as Error).message}\nthe gateway logged:\n${lines
          .slice(-15)
          .map((line) => line.slice(0, 400))
          .join('\n')}`,
        {
          cause: error,
        },
      );
    } finally {
      await gateway.stop();
    }
  },
);
