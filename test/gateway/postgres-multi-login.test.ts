// Dashboard log-in and sign-up limits across gateways on one database: a client that spreads
// its attempts over the gateways behind a load balancer gets the deployment's limit, not the
// limit once per gateway. Each gateway counts floor(limit / live gateways) (the heartbeat of
// aihub.gateways, as for the per-key rate limit). Black box: real processes, real HTTP.
// The live window is ten minutes here (AIHUB_GATEWAY_LIVE_MS): once the gateways count each
// other, a heartbeat late on a loaded machine (past the default 5 s) cannot make one count
// alone for a while and admit the whole limit; the shares checked are the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, type Gateway } from './helpers.ts';
import {
  freshDatabase,
  postgresStoreMissing,
  startGateways,
  stopAll,
  waitAllLive,
} from '../support/multi-gateway.ts';

const skip = await postgresStoreMissing();
/** A live window far longer than the test: the count of live gateways does not depend on timing. */
const STEADY = { AIHUB_GATEWAY_LIVE_MS: '600000' };

/** Posts one of the dashboard's anonymous forms as a browser would (its page first, for the CSRF token). */
async function postForm(
  gateway: Gateway,
  path: '/login' | '/signup',
  fields: Record<string, string>,
): Promise<number> {
  const form = await fetch(`${gateway.url}${path}`);
  const cookie = form.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  assert.ok(csrf, `no CSRF token on ${path}`);
  const reply = await fetch(`${gateway.url}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie,
      origin: gateway.url,
    },
    body: new URLSearchParams({ ...fields, _csrf: csrf }),
  });
  await reply.arrayBuffer();
  return reply.status;
}

/** Sends attempts to the gateways in turn until every one refuses (429); the statuses, in order. */
async function untilAllRefuse(
  gateways: Gateway[],
  attempt: (gateway: Gateway, i: number) => Promise<number>,
  most: number,
): Promise<number[]> {
  const statuses: number[] = [];
  const refused = new Set<number>();
  for (let i = 0; i < most && refused.size < gateways.length; i++) {
    const g = i % gateways.length;
    const status = await attempt(gateways[g]!, i);
    statuses.push(status);
    if (status === 429) refused.add(g);
  }
  assert.equal(refused.size, gateways.length, `every gateway refuses in the end: ${statuses}`);
  return statuses;
}

test(
  'two gateways on one database: failed log-ins per email, dashboard sign-ups and /api/register per address are limited for the deployment, not per gateway',
  { skip, timeout: 180_000 },
  async () => {
    const database_url = await freshDatabase();
    const gateways = await startGateways(database_url, 2, { env: STEADY });
    try {
      // Wait on state: both gateways counted each other's heartbeat.
      await waitAllLive(gateways);
      const email = 'meera@example.com';
      const password = 'a long enough passphrase';
      const registered = await request(`${gateways[0]!.url}/api/register`, {
        body: { email, password, name: 'Meera' },
      });
      assert.equal(registered.status, 201, JSON.stringify(registered.body));

      // Failed log-ins for one email (limit 5 per 15 minutes): each gateway counts 2.
      const logins = await untilAllRefuse(
        gateways,
        (gateway) => postForm(gateway, '/login', { email, password: 'wrong password' }),
        20,
      );
      const failed = logins.filter((status) => status === 401).length;
      assert.ok(failed <= 5, `${failed} wrong passwords tried before the lockout: ${logins}`);
      assert.equal(failed, 4, `each of two gateways allows floor(5 / 2) = 2: ${logins}`);
      for (const gateway of gateways)
        assert.equal(
          await postForm(gateway, '/login', { email, password }),
          429,
          'locked on every gateway, the right password included',
        );

      // Dashboard sign-ups per address (limit 10 per hour): each gateway admits 5.
      const signups = await untilAllRefuse(
        gateways,
        (gateway, i) =>
          postForm(gateway, '/signup', {
            name: `User ${i}`,
            email: `user${i}@example.com`,
            password,
            password_confirm: password,
          }),
        30,
      );
      const created = signups.filter((status) => status === 303).length;
      assert.ok(created <= 10, `${created} sign-ups from one address: ${signups}`);
      assert.equal(created, 10, `${signups}`);

      // /api/register per address (20 per hour by default; the one above counted): 10 each.
      const registers = await untilAllRefuse(
        gateways,
        async (gateway, i) =>
          (
            await request(`${gateway.url}/api/register`, {
              body: { email: `api${i}@example.com`, password, name: `Api ${i}` },
            })
          ).status,
        50,
      );
      const accepted = registers.filter((status) => status === 201).length + 1;
      assert.ok(accepted <= 20, `${accepted} registrations from one address: ${registers}`);
    } finally {
      await stopAll(gateways);
    }
  },
);
