// At most `reports.max_concurrent_per_account` reports of one account run at once; the next
// is refused with 429 and Retry-After, another account is not affected, and a finished
// report frees its slot. Gateway-wide, `reports.max_running` run at once, `reports.max_queued`
// more wait for them in order, and past that every account is refused with 429.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Store } from '../../../gateway/store/store.ts';
import { runReport, withReportSlot } from '../../../gateway/payments/reports/routes.ts';
import type { PaymentsContext } from '../../../gateway/payments/context.ts';
import { tempDir } from '../../support/temp.ts';

const REPORTS = {
  csv_max_rows: 10_000,
  max_concurrent_per_account: 2,
  max_running: 4,
  max_queued: 64,
  cpu_share: 0.05,
};

test('a per-account limit on concurrent reports: 429 with Retry-After past it', async () => {
  const store = await Store.open(tempDir('aihub-report-limit-'));
  try {
    store.indexBy('payment_txns', 'account_id');
    const ctx = {
      store,
      settings: { reports: { ...REPORTS, max_concurrent_per_account: 2 } },
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

test('a gateway-wide limit: max_running run, max_queued wait in order, then 429 for every account', async () => {
  const store = await Store.open(tempDir('aihub-report-limit-'));
  try {
    store.indexBy('payment_txns', 'account_id');
    const ctx = {
      store,
      settings: { reports: { ...REPORTS, max_running: 1, max_queued: 1 } },
    } as unknown as PaymentsContext;
    const started: string[] = [];
    let release!: () => void;
    const held = withReportSlot(ctx, 'acc_a', () => {
      started.push('a');
      return new Promise<void>((resolve) => (release = resolve));
    });
    const queued = withReportSlot(ctx, 'acc_b', async () => {
      started.push('b');
      return 'b done';
    });
    // A third account: the one slot is taken and the queue is full.
    await assert.rejects(
      runReport(ctx, 'transactions', {}, { account_id: 'acc_c' }),
      (error: {
        status: number;
        code: string;
        message: string;
        headers: Record<string, string>;
      }) => {
        assert.equal(error.status, 429);
        assert.equal(error.code, 'rate_limit_exceeded');
        assert.match(error.message, /1 reports are running and 1 waiting in this gateway/);
        assert.ok(Number(error.headers['Retry-After']) >= 1, error.headers['Retry-After']);
        return true;
      },
    );
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(started, ['a'], 'the queued report waits while the slot is taken');
    release();
    await held;
    assert.equal(await queued, 'b done');
    assert.deepEqual(started, ['a', 'b']);
    const after = await runReport(ctx, 'transactions', {}, { account_id: 'acc_c' });
    assert.equal(after.result.report, 'transactions', 'a finished report hands its slot on');
  } finally {
    await store.close();
  }
});
