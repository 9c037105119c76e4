// npm run bench:store — durable commits per second at 1, 16 and 64 concurrent writers, and
// p50 commit latency with 1 thousand vs 1 million history records, side by side in one run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store } from '../../gateway/store/store.ts';
import { FUNDING_TOPUP, creditWallet, debitWallet } from '../../gateway/ledger/ledger.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const LATENCY_SAMPLES = Number(process.env.BENCH_SAMPLES ?? 3000);
const BIG_HISTORY = Number(process.env.BENCH_HISTORY ?? 1_000_000);

async function freshStore(): Promise<{ store: Store; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'aihub-bench-store-'));
  const store = await Store.open(dir, { checkpoint_every_records: 50_000 });
  await store.transact((tx) => {
    for (let i = 0; i < 64; i++) creditWallet(tx, { account_id: `acc${i}`, amount_micros: 1e15, from: FUNDING_TOPUP, memo: 'bench funding' });
  });
  return { store, dir };
}

/** One durable commit: a debit posting, the typical money-moving transaction. */
function commit(store: Store, writer: number, n: number): Promise<unknown> {
  return store.transact((tx) => debitWallet(tx, { account_id: `acc${writer % 64}`, amount_micros: 1000 + (n % 100), to: 'revenue:bench', memo: 'bench' }));
}

async function throughput(writers: number): Promise<{ commits_per_s: number; fsyncs_per_s: number }> {
  const { store, dir } = await freshStore();
  const groups_before = store.commit_groups;
  let commits = 0;
  const deadline = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: writers }, async (_, writer) => {
      while (performance.now() < deadline) {
        await commit(store, writer, commits);
        commits++;
      }
    }),
  );
  const groups = store.commit_groups - groups_before;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return { commits_per_s: commits / SECONDS, fsyncs_per_s: groups / SECONDS };
}

/** Adds `records` history records (postings) in large transactions, then measures single commits. */
async function latencyWithHistory(records: number): Promise<{ p50_ms: number; p99_ms: number }> {
  const { store, dir } = await freshStore();
  const per_tx = 1000;
  for (let done = 0; done < records; done += per_tx) {
    const count = Math.min(per_tx, records - done);
    await store.transact((tx) => {
      for (let i = 0; i < count; i++) creditWallet(tx, { account_id: `acc${i % 64}`, amount_micros: 1, from: FUNDING_TOPUP, memo: 'history' });
    });
  }
  const samples: number[] = [];
  for (let i = 0; i < LATENCY_SAMPLES; i++) {
    const started = performance.now();
    await commit(store, 0, i);
    samples.push(performance.now() - started);
  }
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  samples.sort((a, b) => a - b);
  return { p50_ms: samples[Math.floor(samples.length * 0.5)]!, p99_ms: samples[Math.floor(samples.length * 0.99)]! };
}

const rows: string[][] = [];
for (const writers of [1, 16, 64]) {
  const result = await throughput(writers);
  rows.push([`durable commits/s, ${writers} writer${writers > 1 ? 's' : ''}`, result.commits_per_s.toFixed(0), `${result.fsyncs_per_s.toFixed(0)} fsyncs/s`]);
}
const small = await latencyWithHistory(1000);
const big = await latencyWithHistory(BIG_HISTORY);
rows.push(['p50 commit latency, 1k history records', `${small.p50_ms.toFixed(3)} ms`, `p99 ${small.p99_ms.toFixed(3)} ms`]);
rows.push([`p50 commit latency, ${BIG_HISTORY / 1e6}M history records`, `${big.p50_ms.toFixed(3)} ms`, `p99 ${big.p99_ms.toFixed(3)} ms`]);
rows.push([`latency ratio ${BIG_HISTORY / 1e6}M / 1k (target <= 1.2)`, (big.p50_ms / small.p50_ms).toFixed(3), '']);

const widths = [0, 1, 2].map((c) => Math.max(...rows.map((r) => r[c]!.length), 10));
console.log('\nAIHub store benchmark (durable: every commit fdatasync-ed before it resolves)\n');
for (const row of rows) console.log(`  ${row[0]!.padEnd(widths[0]!)}  ${row[1]!.padStart(widths[1]!)}  ${row[2]}`);
console.log(`\n  target: >= 10,000 durable commits/s with 16 writers; ${SECONDS}s per throughput row, ${LATENCY_SAMPLES} latency samples`);
