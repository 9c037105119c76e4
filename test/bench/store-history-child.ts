// One measurement of `npm run bench:store`'s history rows, in a fresh process so that the
// heap it reports is the store's alone: opens the data dir given (a restart), then times a
// transaction by id, an account's newest page and a one-day report for one account.
// Prints one JSON line.
import { Store } from '../../gateway/store/store.ts';
import { reportTransactions } from '../../gateway/payments/reports.ts';
import { FILL_T0_MS, fillAccount, fillTxnId } from '../support/history-fill.ts';

const [data_dir, txns_text, accounts_text, step_text] = process.argv.slice(2);
const txns = Number(txns_text);
const accounts = Number(accounts_text);
const step_ms = Number(step_text);
const started = performance.now();
const store = await Store.open(data_dir!, { checkpoint_interval_ms: 3_600_000 });
const open_ms = performance.now() - started;
(globalThis as { gc?: () => void }).gc?.();
const heap_mb = process.memoryUsage().heapUsed / 1e6;
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
const by_id_ms = perOp(2_000, () => {
  const id = fillTxnId(Math.floor(random() * txns));
  if (!store.get('payment_txns', id)) throw new Error(`${id} not found`);
});
const page_ms = perOp(500, (i) => {
  const page = store.reads.txns({ account_id: fillAccount(i % accounts) }, { offset: 0, limit: 50 });
  if (page.rows.length === 0) throw new Error('empty page');
});
// The UTC day of the transaction three quarters into the history, for one account.
const last_day_ms = Math.floor((FILL_T0_MS + Math.floor((txns * 3) / 4) * step_ms) / 86_400_000) * 86_400_000;
const day_ms = await perOpAsync(200, async (i) => {
  const report = await reportTransactions(store, { from: last_day_ms, to: last_day_ms + 86_400_000 - 1 }, { page: 1, limit: 50, order: 'desc' }, { account_id: fillAccount(i % accounts) });
  if (report.total === 0) throw new Error('empty day');
});
await store.close();
process.stdout.write(`${JSON.stringify({ open_ms, heap_mb, rss_mb, by_id_ms, page_ms, day_ms })}\n`);
