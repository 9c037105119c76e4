// Issue #25, item 2: limits that lose to parallel guesses. A login checked its limit, awaited
// scrypt, then counted the failure: 60 parallel guesses from one address were all evaluated.
// Each attempt now takes its slot before the check (and gives it back on success), so however
// many arrive at once no more are evaluated than the limit allows: the dashboard log-in (5 per
// email, 20 per address), the admin console (5 per address, shared with the admin API's
// bearer tokens), dashboard sign-ups (10 per address) and /api/register (20 per address).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DashboardClient } from '../support/dashboard-client.ts';
import { request, startGateway } from './helpers.ts';

const PARALLEL = 60;

/** `n` anonymous browsers, each with its own session and the CSRF token of `page`. */
async function browsers(url: string, page: string, n: number) {
  const out: Array<{ client: DashboardClient; csrf: string }> = [];
  for (let i = 0; i < n; i++) {
    const client = new DashboardClient(url);
    out.push({ client, csrf: await client.csrf(page) });
  }
  return out;
}

const tally = (statuses: number[]) =>
  statuses.reduce<Record<number, number>>((counts, status) => {
    counts[status] = (counts[status] ?? 0) + 1;
    return counts;
  }, {});

test('item 2: 60 parallel log-in guesses for one email: at most 5 are evaluated, the rest (the right password among them, sent last) are 429', async () => {
  const gateway = await startGateway();
  try {
    const email = 'victim@example.com';
    const password = 'the right passphrase';
    const registered = await request(`${gateway.url}/api/register`, {
      body: { email, password, name: 'Victim' },
    });
    assert.equal(registered.status, 201);
    const clients = await browsers(gateway.url, '/login', PARALLEL);
    const statuses = await Promise.all(
      clients.map(({ client, csrf }, i) =>
        client
          .post(
            '/login',
            { email, password: i === PARALLEL - 1 ? password : `wrong guess ${i}` },
            { csrf },
          )
          .then((reply) => reply.status),
      ),
    );
    const counts = tally(statuses);
    const evaluated = (counts[401] ?? 0) + (counts[303] ?? 0);
    assert.ok(evaluated <= 5, `${evaluated} guesses evaluated: ${JSON.stringify(counts)}`);
    assert.equal(counts[429], PARALLEL - evaluated, JSON.stringify(counts));
    if (statuses[PARALLEL - 1] === 303)
      assert.equal(counts[401], 4, 'a right password took one slot');
    // Locked now, the right password included.
    const late = new DashboardClient(gateway.url);
    assert.equal((await late.post('/login', { email, password })).status, 429);
  } finally {
    await gateway.stop();
  }
});

test('item 2: a right password gives its slot back: rounds of 5 parallel right log-ins never lock the account', async () => {
  const gateway = await startGateway();
  try {
    const email = 'busy@example.com';
    const password = 'the right passphrase';
    await request(`${gateway.url}/api/register`, { body: { email, password, name: 'Busy' } });
    for (let round = 0; round < 4; round++) {
      const clients = await browsers(gateway.url, '/login', 5);
      const statuses = await Promise.all(
        clients.map(({ client, csrf }) =>
          client.post('/login', { email, password }, { csrf }).then((reply) => reply.status),
        ),
      );
      assert.deepEqual(tally(statuses), { 303: 5 }, `round ${round}`);
    }
  } finally {
    await gateway.stop();
  }
});

test('item 2: the admin console and the admin API: 60 parallel wrong tokens from one address, at most 5 tried', async () => {
  const gateway = await startGateway();
  try {
    const clients = await browsers(gateway.url, '/admin/login', PARALLEL / 2);
    const console_statuses = await Promise.all(
      clients.map(({ client, csrf }, i) =>
        client
          .post('/admin/login', { token: `wrong-token-${i}-${'x'.repeat(32)}` }, { csrf })
          .then((reply) => reply.status),
      ),
    );
    const api_statuses = await Promise.all(
      Array.from({ length: PARALLEL / 2 }, (_, i) =>
        request(`${gateway.url}/admin/accounts`, {
          headers: { authorization: `Bearer wrong-token-${i}-${'y'.repeat(32)}` },
        }).then((reply) => reply.status),
      ),
    );
    const counts = tally([...console_statuses, ...api_statuses]);
    assert.ok((counts[401] ?? 0) <= 5, JSON.stringify(counts));
    assert.equal((counts[401] ?? 0) + (counts[429] ?? 0), PARALLEL, JSON.stringify(counts));
  } finally {
    await gateway.stop();
  }
});

test('item 2: 40 parallel dashboard sign-ups and 40 parallel /api/register calls from one address: 10 and 20 admitted', async () => {
  const gateway = await startGateway();
  try {
    const clients = await browsers(gateway.url, '/signup', 40);
    const signups = await Promise.all(
      clients.map(({ client, csrf }, i) =>
        client
          .post(
            '/signup',
            {
              name: `User ${i}`,
              email: `signup${i}@example.com`,
              password: 'a long enough passphrase',
              password_confirm: 'a long enough passphrase',
            },
            { csrf },
          )
          .then((reply) => reply.status),
      ),
    );
    assert.deepEqual(tally(signups), { 303: 10, 429: 30 });
    const registers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        request(`${gateway.url}/api/register`, {
          body: { email: `api${i}@example.com`, password: 'a long enough passphrase', name: 'A' },
        }).then((reply) => reply.status),
      ),
    );
    assert.deepEqual(tally(registers), { 201: 20, 429: 20 });
  } finally {
    await gateway.stop();
  }
});
