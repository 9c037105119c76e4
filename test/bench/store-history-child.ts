// One measurement of `npm run bench:store`'s history rows, in a fresh process so that the
// heap it reports is the store's alone: opens the data dir given (a restart), then times a
// transaction by id, an account's newest page and a one-day report for one account.
// Prints one JSON line.
import { Store } from '../../gateway/store/store.ts';
import { reportTransactions } from '../../gateway/payments/reports/reports.ts';
import { debitWallet } from '../../gateway/ledger/ledger.ts';
import { FILL_T0_MS, fillAccount, fillTxnId } from '../support/history-fill.ts';
import { PAYMENT_HISTORY_TAGS } from '../../gateway/payments/history-tags.ts';

const [data_dir, txns_text, accounts_text, step_text, with_chat] = process.argv.slice(2);
const txns = Number(txns_text);
const accounts = Number(accounts_text);
const step_ms = Number(step_text);
const started = performance.now();
const store = await Store.open(data_dir!, {
  history_tags: PAYMENT_HISTORY_TAGS,
  checkpoint_interval_ms: 3_600_000,
});
const open_ms = performance.now() - started;
(globalThis as { gc?: () => void }).gc?.();
const heap_mb = process.memoryUsage().heapUsed / 1e6;
/** Typed arrays (the id runs' fences and filters) live outside the JS heap: counted beside it. */
const buffers_mb = process.memoryUsage().arrayBuffers / 1e6;
const rss_mb = process.memoryUsage().rss / 1e6;

function perOp(count: number, fn: (i: number) => unknown): number {
  for (let i = 0; i < Math.min(50, count); i++) fn(i * 7919);
  const t = performance.now();
  for (let i = 0; i < count; i++) fn(i * 7919);
  return (performance.now() - t) / count;
}
async function perOpAsync(count: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(20, count); i++) await fn(i * 7919);
  const t = performance.now();
  for (let i = 0; i < count; i++) await fn(i * 7919);
  return (performance.now() - t) / count;
}
let seed = 1;
const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
const blocks_before = store.archive.id_blocks_read;
const by_id_ms = perOp(2_000, () => {
  const id = fillTxnId(Math.floor(random() * txns));
  if (!store.get('payment_txns', id)) throw new Error(`${id} not found`);
});
// The same ids again: their blocks and journal lines are in the page cache now, so what is
// left is the index's own work (a cold lookup at a large size may wait for the disk).
seed = 1;
const by_id_warm_ms = perOp(2_000, () => {
  const id = fillTxnId(Math.floor(random() * txns));
  if (!store.get('payment_txns', id)) throw new Error(`${id} not found`);
});
/** Blocks of id runs read per lookup (both passes and their warm-ups counted). */
const blocks_per_id = (store.archive.id_blocks_read - blocks_before) / 4_100;
const page_ms = await perOpAsync(500, async (i) => {
  const page = await store.reads.txns(
    { account_id: fillAccount(i % accounts) },
    { offset: 0, limit: 50 },
  );
  if (page.rows.length === 0) throw new Error('empty page');
});
// The UTC day of the transaction three quarters into the history, for one account.
const last_day_ms =
  Math.floor((FILL_T0_MS + Math.floor((txns * 3) / 4) * step_ms) / 86_400_000) * 86_400_000;
const day_ms = await perOpAsync(200, async (i) => {
  const report = await reportTransactions(
    store,
    { from: last_day_ms, to: last_day_ms + 86_400_000 - 1 },
    { page: 1, limit: 50, order: 'desc' },
    { account_id: fillAccount(i % accounts) },
  );
  if (report.total === 0) throw new Error('empty day');
});

/**
 * Chat settlements (a wallet debit and a usage record, one durable commit each: what a chat
 * request writes) at a steady load of 4 writers, 1,500 of them: latency p50 and p99.
 */
async function chatLatency(): Promise<number[]> {
  const samples: number[] = [];
  let n = 0;
  await Promise.all(
    Array.from({ length: 4 }, async (_, writer) => {
      while (n < 1_500) {
        const i = n++;
        const started = performance.now();
        await store.transact((tx) => {
          const account_id = fillAccount(writer);
          debitWallet(tx, {
            account_id,
            amount_micros: 1_200,
            to: 'revenue:ai',
            memo: 'chat',
            ref: `bench_chat_${i}_${Math.random()}`,
          });
          tx.history({
            type: 'usage',
            ts: new Date().toISOString(),
            request_id: `bench_chat_${i}`,
            account_id,
            key_id: 'bench',
            tier: 'lite',
            model: 'service-ai-lite',
            target: 'builtin',
            status: 'ok',
            stream: false,
            prompt_tokens: 100,
            completion_tokens: 20,
            cost_micros: 1_200,
          });
        });
        samples.push(performance.now() - started);
      }
    }),
  );
  samples.sort((a, b) => a - b);
  return [samples[Math.floor(samples.length * 0.5)]!, samples[Math.floor(samples.length * 0.99)]!];
}

let chat: { alone: number[]; reports: number[]; reports_done: number } | undefined;
if (with_chat === 'chat') {
  const alone = await chatLatency();
  // 16 reports at once, each of one account's whole history (one per account: the
  // per-account limit holds), started again as each ends, for as long as chat is measured.
  let running = true;
  let reports_done = 0;
  const reports = Array.from({ length: 16 }, async (_, k) => {
    while (running) {
      await reportTransactions(
        store,
        {},
        { page: 1, limit: 50, order: 'desc' },
        { account_id: fillAccount(k % accounts) },
      );
      reports_done++;
    }
  });
  const with_reports = await chatLatency();
  running = false;
  await Promise.all(reports);
  chat = { alone, reports: with_reports, reports_done };
}
await store.close();
process.stdout.write(
  `${JSON.stringify({ open_ms, heap_mb, buffers_mb, rss_mb, by_id_ms, by_id_warm_ms, blocks_per_id, page_ms, day_ms, ...(chat ? { chat } : {}) })}\n`,
);
