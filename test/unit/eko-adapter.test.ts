// The Eko adapter (providers/eko/adapter.ts) called directly against the scripted Eko
// (test/support/eko-server.ts): Eko's tx_status values as our outcomes, a duplicate reference
// read as pending, the inquiry's "TID does not exist" as not found, a missing key or an
// unmapped operator as unavailable (never a decline), and a stale clock refused by Eko.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ekoProviderSchema } from '../../gateway/providers/eko/config.ts';
import { EkoProvider, clientRefOf } from '../../gateway/providers/eko/adapter.ts';
import { ProviderUnavailableError, type ProviderRequest } from '../../gateway/providers/types.ts';
import { EKO, startEko } from '../support/eko-server.ts';

const ENV = { AIHUB_EKO_DEVELOPER_KEY: EKO.developer_key, AIHUB_EKO_ACCESS_KEY: EKO.access_key };

function provider(url: string, env: NodeJS.ProcessEnv = ENV) {
  const config = ekoProviderSchema.parse({
    type: 'eko',
    name: 'eko',
    base_url: url,
    initiator_id: EKO.initiator_id,
    user_code: EKO.user_code,
    latlong: '12.9716,77.5946',
    timeout_ms: 1_000,
    codes: { operator_id: { '1': '400' } },
  });
  return new EkoProvider(config, env, () => new Date());
}

let n = 0;
function recharge(number: string, operator_id = 1): ProviderRequest {
  n += 1;
  return {
    txn_id: `txn_${n.toString(16).padStart(24, 'a')}`,
    service: 'recharge',
    amount_micros: 100_000_000,
    subject: number,
    params: { operator_id },
    submitted_at: new Date().toISOString(),
  };
}

const signal = () => AbortSignal.timeout(2_000);

test("Eko's statuses as ours, a duplicate reference as pending, an unknown reference as not found", async () => {
  const server = await startEko();
  const eko = provider(server.url);
  try {
    const ok = recharge('9876500001');
    assert.equal((await eko.submit(ok, signal())).outcome, 'success');
    // The same reference again is Eko's duplicate answer: ask the status, never a decline.
    const again = await eko.submit(ok, signal());
    assert.equal(again.outcome, 'pending');
    assert.equal(server.txns.size, 1);
    assert.equal((await eko.status({ ...ok, provider_ref: null }, signal())).outcome, 'success');
    const failed = await eko.submit(recharge('9876500003'), signal());
    assert.equal(failed.outcome, 'failed');
    // Refunded (4) after a success is a reversal; refund pending (3) a failure; hold (5) on hold.
    for (const [tx_status, outcome, code] of [
      [4, 'failed', 'reversed'],
      [3, 'failed', 'refund_pending'],
      [5, 'on_hold', undefined],
      [2, 'pending', undefined],
    ] as const) {
      const txn = server.txns.get(clientRefOf(ok.txn_id))!;
      Object.assign(txn, { tx_status, awaited: 99 });
      const status = await eko.status({ ...ok, provider_ref: null }, signal());
      assert.equal(status.outcome, outcome, `tx_status ${tx_status}`);
      assert.equal((status as { code?: string }).code, code);
    }
    const unknown = await eko.status({ ...recharge('9876500001'), provider_ref: null }, signal());
    assert.equal(unknown.outcome, 'not_found');
  } finally {
    await server.close();
  }
});

test('a missing key, an unmapped operator and a clock Eko finds stale are unavailable, not declines', async () => {
  const server = await startEko(() => Date.now() + 10 * 60_000);
  try {
    const unavailable = async (promise: Promise<unknown>, kind: string, pattern: RegExp) => {
      const error = await promise.then(
        () => assert.fail('expected unavailable'),
        (e: unknown) => e,
      );
      assert.ok(error instanceof ProviderUnavailableError, String(error));
      assert.equal(error.kind, kind);
      assert.match(error.message, pattern);
    };
    const keyless = provider(server.url, { AIHUB_EKO_DEVELOPER_KEY: EKO.developer_key });
    await unavailable(
      keyless.submit(recharge('9876500001'), signal()),
      'misconfigured',
      /AIHUB_EKO_ACCESS_KEY/,
    );
    const eko = provider(server.url);
    await unavailable(
      eko.submit(recharge('9876500001', 7), signal()),
      'misconfigured',
      /operator_id 7/,
    );
    // The scripted Eko's clock is ten minutes ahead: our timestamp is stale there (403).
    await unavailable(eko.submit(recharge('9876500001'), signal()), 'misconfigured', /403/);
    assert.deepEqual(
      server.refused.map((r) => r.why),
      ['secret-key-timestamp stale'],
    );
    assert.equal(server.txns.size, 0, 'nothing was paid');
  } finally {
    await server.close();
  }
});
