// At most `reports.max_concurrent_per_account` reports of one account run at once; the next
// is refused with 429 and Retry-After, another account is not affected, and a finished
// report frees its slot. Gateway-wide, `reports.max_running` run at once, `reports.max_queued`
// more wait for them in order, and past that every account is refused with 429.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Store } from '../../../gateway/store/store.ts';
import { runReport } from '../../../gateway/payments/reports/routes.ts';
import { withReportSlot } from '../../../gateway/payments/shared/report-slots.ts';
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

test('slots are shared fairly: a freed slot goes to an account running none before one running some; a stalled download yields to another account only', async () => {
  const store = await Store.open(tempDir('aihub-report-limit-'));
  try {
    const ctx = {
      store,
      settings: { reports: { ...REPORTS, max_running: 2, max_queued: 8 } },
    } as unknown as PaymentsContext;
    const started: string[] = [];
    const gates = new Map<string, () => void>();
    /** A report that runs until its gate opens. */
    const report = (who: string, name: string) =>
      withReportSlot(ctx, who, () => {
        started.push(name);
        return new Promise<void>((resolve) => gates.set(name, resolve));
      });
    const tick = () => new Promise((resolve) => setImmediate(resolve));
    const a1 = report('acc_a', 'a1');
    const b1 = report('acc_b', 'b1');
    const a2 = report('acc_a', 'a2'); // queued first
    const c1 = report('acc_c', 'c1'); // queued after it
    await tick();
    assert.deepEqual(started, ['a1', 'b1']);
    gates.get('b1')!();
    await b1;
    await tick();
    assert.deepEqual(started, ['a1', 'b1', 'c1'], "acc_c runs none: it goes before acc_a's second");
    gates.get('a1')!();
    await a1;
    await tick();
    assert.deepEqual(started, ['a1', 'b1', 'c1', 'a2']);
    gates.get('a2')!();
    gates.get('c1')!();
    await Promise.all([a2, c1]);

    // A download stalled on its client keeps its slot for its own account's next report…
    let unstall!: () => Promise<void>;
    let done!: () => void;
    const download = withReportSlot(ctx, 'acc_d', async (slot) => {
      slot.stall();
      unstall = () => slot.unstall();
      await new Promise<void>((resolve) => (done = resolve));
    });
    const other = report('acc_e', 'e1'); // the second slot
    await tick();
    const same = report('acc_d', 'd2');
    await tick();
    assert.deepEqual(
      started.slice(4),
      ['e1'],
      "acc_d's own report waits behind its stalled download",
    );
    // …and gives it up at once to another account's report.
    const third = report('acc_f', 'f1');
    await tick();
    assert.deepEqual(started.slice(4), ['e1', 'f1'], "acc_f takes the stalled download's slot");
    // The client reads on: the download waits its turn again, behind d2 (the same account,
    // which waited first), then finishes.
    const resumed = unstall();
    gates.get('e1')!();
    await other;
    await tick();
    assert.deepEqual(
      started.slice(4),
      ['e1', 'f1', 'd2'],
      'the oldest waiter of the fewest-running account',
    );
    gates.get('d2')!();
    await same;
    await resumed;
    done();
    await download;
    gates.get('f1')!();
    await third;
  } finally {
    await store.close();
  }
});
