// Per-key rate limits across gateways on one database (issue #18: "exact or a documented
// per-gateway share"): each gateway heartbeats into aihub.gateways and admits
// ceil(limit / live gateways) per key, so two gateways together admit the limit plus at most
// one request of rounding, not twice the limit. Black box: real processes, real HTTP.
// The first test sets a ten-minute live window (AIHUB_GATEWAY_LIVE_MS): a heartbeat late on a
// loaded machine (past the default 5 s) cannot make a gateway count alone mid-test and admit
// the whole limit. The second keeps the default: a stopping gateway deletes its row, so the
// one left takes the whole limit back at its next heartbeat, whatever the window.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createFundedAccount, request } from './helpers.ts';
import { waitFor } from '../support/payments-helpers.ts';
import {
  freshDatabase,
  metric,
  postgresStoreMissing,
  startGateways,
  stopAll,
  waitAllLive,
} from '../support/multi-gateway.ts';

const skip = await postgresStoreMissing();
const LIMIT = 9; // odd: each of two gateways admits ceil(9 / 2) = 5
/** A live window far longer than the test: the count of live gateways does not depend on timing. */
const STEADY = { AIHUB_GATEWAY_LIVE_MS: '600000' };

/** Two gateways on a fresh database, each admitting its share of LIMIT per key. */
async function twoGateways(env: Record<string, string> = {}) {
  const database_url = await freshDatabase();
  const config = { chat: { rate_limit: { requests_per_minute: LIMIT } } };
  return { database_url, gateways: await startGateways(database_url, 2, { config, env }) };
}

test(
  'two gateways on one database share a per-key rate limit: together they admit the limit plus one rounding, not twice it',
  { skip, timeout: 120_000 },
  async () => {
    const { gateways } = await twoGateways(STEADY);
    try {
      // Wait on state: both gateways counted each other's heartbeat.
      await waitAllLive(gateways);
      for (const gateway of gateways)
        assert.equal(await metric(gateway, 'aihub_chat_rate_limit_share'), Math.ceil(LIMIT / 2));

      const { key } = await createFundedAccount(gateways[0]!, 0);
      const started_ms = Date.now();
      const admitted = [0, 0];
      let refusal: any = null;
      // Requests alternate between the gateways, well past the limit on each. An empty body
      // is refused (400) after the rate limit took its token: anything but 429 was admitted.
      for (let i = 0; i < LIMIT * 3; i++) {
        const g = i % 2;
        const reply = await request(`${gateways[g]!.url}/v1/chat/completions`, {
          headers: { authorization: `Bearer ${key}` },
          body: {},
        });
        if (reply.status === 429) refusal = reply;
        else admitted[g]!++;
      }
      const elapsed_ms = Date.now() - started_ms;
      // What the shared limit refills while the requests ran (a token per 60 / LIMIT s over
      // both gateways together), so the bound does not depend on how fast this machine is.
      const refilled = Math.ceil((elapsed_ms / 60_000) * LIMIT);
      const total = admitted[0]! + admitted[1]!;
      assert.ok(
        total <= LIMIT + 1 + refilled,
        `admitted ${admitted} (${total}) in ${elapsed_ms} ms: more than the limit ${LIMIT} + 1 + ${refilled} refilled`,
      );
      assert.ok(total >= LIMIT, `admitted ${admitted}: each gateway admits its share`);
      for (const count of admitted) assert.ok(count >= Math.ceil(LIMIT / 2), `${admitted}`);
      assert.ok(refusal, 'some requests were refused');
      assert.match(refusal.body.error.message, /this gateway's share: 5, one of 2 gateways/);
      assert.ok(Number(refusal.headers.get('retry-after')) >= 1);
    } finally {
      await stopAll(gateways);
    }
  },
);

test(
  'a gateway that stops leaves the share: the one left admits the whole limit again',
  { skip, timeout: 120_000 },
  async () => {
    const { gateways } = await twoGateways();
    try {
      await waitFor(
        async () => (await metric(gateways[0]!, 'aihub_gateways_live')) === 2,
        () => 'g1 never saw g2',
      );
      await gateways[1]!.stop();
      await waitFor(
        async () => (await metric(gateways[0]!, 'aihub_chat_rate_limit_share')) === LIMIT,
        async () => `share ${await metric(gateways[0]!, 'aihub_chat_rate_limit_share')}`,
      );
      assert.equal(await metric(gateways[0]!, 'aihub_gateways_live'), 1);
    } finally {
      await stopAll(gateways);
    }
  },
);

test(
  'the live window is AIHUB_GATEWAY_LIVE_MS: a gateway stalled past the default 5 s still counts, so the shares hold',
  { skip, timeout: 120_000 },
  async () => {
    const { database_url, gateways } = await twoGateways(STEADY);
    const db = new pg.Client({ connectionString: database_url });
    await db.connect();
    /** g1's last heartbeat, and how long g2's had been silent then (ms). */
    const beats = async () => {
      const { rows } = await db.query<{ g1: Date; silent_ms: number }>(
        `SELECT a.seen_at AS g1, extract(epoch FROM a.seen_at - b.seen_at) * 1000 AS silent_ms
         FROM aihub.gateways a, aihub.gateways b WHERE a.id = 'g1' AND b.id = 'g2'`,
      );
      return { g1: rows[0]!.g1.getTime(), silent_ms: Number(rows[0]!.silent_ms) };
    };
    try {
      await waitAllLive(gateways);
      // g2 stops heartbeating (the process is stopped, as a stalled machine would be) ...
      gateways[1]!.proc.kill('SIGSTOP');
      try {
        // ... until g1 has heartbeated with g2 silent for more than the default window, and
        // once more after that (so the count of that heartbeat is the one /metrics shows).
        let seen: number | null = null;
        await waitFor(
          async () => {
            const now = await beats();
            if (seen === null && now.silent_ms > 6_000) seen = now.g1;
            return seen !== null && now.g1 > seen;
          },
          async () => JSON.stringify(await beats()),
          30_000,
        );
        assert.equal(await metric(gateways[0]!, 'aihub_gateways_live'), 2);
        assert.equal(
          await metric(gateways[0]!, 'aihub_chat_rate_limit_share'),
          Math.ceil(LIMIT / 2),
        );
      } finally {
        gateways[1]!.proc.kill('SIGCONT');
      }
    } finally {
      await db.end();
      await stopAll(gateways);
    }
  },
);
