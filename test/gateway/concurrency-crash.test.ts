import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admin, createFundedAccount, runVerify, startGateway, type Gateway } from './helpers.ts';

test('500 concurrent debits against a wallet that affords exactly 100: exactly 100 succeed', async () => {
  const gateway = await startGateway();
  try {
    const { account_id } = await createFundedAccount(gateway, 100);
    const api = admin(gateway);
    const replies = await Promise.all(
      Array.from({ length: 500 }, (_, i) =>
        api.post(`/admin/accounts/${account_id}/debit`, { amount: 1, reference: `debit-${i}` }),
      ),
    );
    const statuses = replies.map((reply) => reply.status);
    assert.equal(statuses.filter((status) => status === 200).length, 100);
    assert.equal(statuses.filter((status) => status === 402).length, 400);
    assert.ok(
      replies
        .filter((r) => r.status === 402)
        .every((r) => r.body.error.code === 'insufficient_balance'),
    );
    assert.equal((await api.get(`/admin/accounts/${account_id}`)).body.balance, 0);
  } finally {
    await gateway.stop();
  }
  const verify = await runVerify(gateway.data_dir);
  assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  assert.equal(JSON.parse(verify.stdout).postings, 101);
});

test(
  'SIGKILL at random moments, 50 times: every acknowledged mutation survives and verify passes',
  { timeout: 600_000 },
  async () => {
    const KILLS = 50;
    let gateway: Gateway = await startGateway();
    const data_dir = gateway.data_dir;
    const { account_id } = await createFundedAccount(gateway);
    const acknowledged = new Map<string, number>(); // reference → signed amount in cents
    const unknown = new Map<string, number>(); // sent, answer lost to the kill
    let accounts_acknowledged = 0;
    let counter = 0;
    try {
      for (let round = 0; round < KILLS; round++) {
        const api = admin(gateway);
        let stop = false;
        const worker = async () => {
          while (!stop) {
            const n = counter++;
            const debit = n % 4 === 3;
            const cents = 100 + (n % 7);
            const reference = `crash-${n}`;
            const path = `/admin/accounts/${account_id}/${debit ? 'debit' : 'credit'}`;
            unknown.set(reference, debit ? -cents : cents);
            try {
              const reply =
                n % 10 === 9
                  ? await api.post('/admin/accounts', { email: `crash-${n}@example.com` })
                  : await api.post(path, { amount: cents / 100, reference });
              unknown.delete(reference);
              if (reply.status === 200) acknowledged.set(reference, debit ? -cents : cents);
              else if (reply.status === 201) accounts_acknowledged++;
              else if (reply.status !== 402)
                throw new Error(`unexpected ${reply.status} ${JSON.stringify(reply.body)}`);
            } catch (error) {
              if (!(error instanceof TypeError)) throw error; // fetch failed: the process died mid-request
              return;
            }
          }
        };
        const workers = Array.from({ length: 8 }, worker);
        await new Promise((resolve) => setTimeout(resolve, 30 + Math.floor(Math.random() * 150)));
        gateway.proc.kill('SIGKILL');
        stop = true;
        await Promise.all(workers);
        await gateway.stop();

        gateway = await startGateway({ data_dir });
        const api_after = admin(gateway);
        const balance_cents = Math.round(
          (await api_after.get(`/admin/accounts/${account_id}`)).body.balance * 100,
        );
        const sure = [...acknowledged.values()].reduce((a, b) => a + b, 0);
        const maybe_up = [...unknown.values()].filter((v) => v > 0).reduce((a, b) => a + b, 0);
        const maybe_down = [...unknown.values()].filter((v) => v < 0).reduce((a, b) => a + b, 0);
        assert.ok(
          balance_cents >= sure + maybe_down && balance_cents <= sure + maybe_up,
          `round ${round}: balance ${balance_cents} outside [${sure + maybe_down}, ${sure + maybe_up}]`,
        );
        // Every acknowledged reference is on disk: repeating it is recognised as a duplicate
        // (a sample per round; all of them are checked at the end).
        await expectDuplicates(
          api_after,
          account_id,
          [...acknowledged].filter(() => Math.random() <= 0.2),
          `round ${round}: `,
        );
        // Settle the unknowns: whichever happened, the repeat makes it certain and moves money at most once.
        for (const [reference, cents] of unknown) {
          const settle = await api_after.post(
            `/admin/accounts/${account_id}/${cents < 0 ? 'debit' : 'credit'}`,
            { amount: Math.abs(cents) / 100, reference },
          );
          if (settle.status === 200) acknowledged.set(reference, cents);
        }
        unknown.clear();
        const settled_cents = Math.round(
          (await api_after.get(`/admin/accounts/${account_id}`)).body.balance * 100,
        );
        assert.equal(
          settled_cents,
          [...acknowledged.values()].reduce((a, b) => a + b, 0),
          `round ${round}: settled balance`,
        );
      }
      const api = admin(gateway);
      await expectDuplicates(api, account_id, [...acknowledged], '');
      const listed = await api.get('/admin/accounts?limit=500');
      assert.ok(listed.body.total >= accounts_acknowledged + 1);
      assert.ok(
        acknowledged.size > KILLS,
        `enough mutations were acknowledged (${acknowledged.size})`,
      );
    } finally {
      await gateway.stop('SIGKILL');
    }
    const verify = await runVerify(data_dir);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  },
);

/**
 * Repeats each acknowledged reference and asserts it is recognised as a duplicate (so on disk,
 * and moving no money). The repeats go 16 at a time: a lookup by reference is one probe of the
 * store (an index probe on PostgreSQL, whose concurrent probes share one statement), and one by
 * one they were thousands of sequential round trips per run (O(rounds²) over 50 rounds, 258 s
 * on PostgreSQL) for a property that does not depend on their order: references are distinct.
 */
async function expectDuplicates(
  api: ReturnType<typeof admin>,
  account_id: string,
  entries: [reference: string, cents: number][],
  context: string,
): Promise<void> {
  const AT_ONCE = 16;
  for (let at = 0; at < entries.length; at += AT_ONCE) {
    const replies = await Promise.all(
      entries.slice(at, at + AT_ONCE).map(async ([reference, cents]) => {
        const again = await api.post(
          `/admin/accounts/${account_id}/${cents < 0 ? 'debit' : 'credit'}`,
          { amount: Math.abs(cents) / 100, reference },
        );
        return { reference, again };
      }),
    );
    for (const { reference, again } of replies)
      assert.equal(again.body.duplicate, true, `${context}acknowledged ${reference} was lost`);
  }
}
