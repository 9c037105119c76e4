// At most `reports.max_concurrent_per_account` reports of one account run at once; the next
// is refused with 429 and Retry-After, another account is not affected, and a finished
// report frees its slot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Store } from '../../../gateway/store/store.ts';
import { runReport } from '../../../gateway/payments/reports-routes.ts';
import type { PaymentsContext } from '../../../gateway/payments/context.ts';
import { tempDir } from '../../support/temp.ts';

test('a per-account limit on concurrent reports: 429 with Retry-After past it', async () => {
  const store = await Store.open(tempDir('aihub-report-limit-'));
  try {
    store.indexBy('payment_txns', 'account_id');
    const ctx = {
      store,
      settings: { reports: { csv_max_rows: 10_000, max_concurrent_per_account: 2 } },
    } as unknown as PaymentsContext;
    const a = { account_id: 'acc_a' };
    // Each report waits for the durable state first, so these three run at once.
    const first = runReport(ctx, 'api-logs', {}, a);
    const second = runReport(ctx, 'wallet', {}, a);
    const third = runReport(ctx, 'transactions', {}, a);
    const other = runReport(ctx, 'transactions', {}, { account_id: 'acc_b' });
    await assert.rejects(
      third,
      (error: { status: number; code: string; headers: Record<string, string> }) => {
        assert.equal(error.status, 429);
        assert.equal(error.code, 'rate_limit_exceeded');
        assert.equal(error.headers['Retry-After'], '1');
        return true;
      },
    );
    assert.equal((await first).result.total, 0);
    assert.equal((await second).result.total, 0);
    assert.equal((await other).result.total, 0, 'another account has its own slots');
    assert.equal(
      (await runReport(ctx, 'transactions', {}, a)).result.report,
      'transactions',
      'finished reports free their slots',
    );
  } finally {
    await store.close();
  }
});
