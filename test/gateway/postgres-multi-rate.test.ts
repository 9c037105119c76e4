// Per-key rate limits across gateways on one database (issue #18: "exact or a documented
// per-gateway share"): each gateway heartbeats into aihub_gateways and admits
// ceil(limit / live gateways) per key, so two gateways together admit the limit plus at most
// one request of rounding, not twice the limit. Black box: real processes, real HTTP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
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

test(
  'two gateways on one database share a per-key rate limit: together they admit the limit plus one rounding, not twice it',
  { skip, timeout: 120_000 },
  async () => {
    const database_url = await freshDatabase();
    const gateways = await startGateways(database_url, 2, {
      config: { chat: { rate_limit: { requests_per_minute: LIMIT } } },
    });
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
    const database_url = await freshDatabase();
    const gateways = await startGateways(database_url, 2, {
      config: { chat: { rate_limit: { requests_per_minute: LIMIT } } },
    });
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
