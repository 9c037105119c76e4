// npm run bench:postgres, restart rows (issue #18): a PostgreSQL gateway's open with a kept
// replica at a small and a large history (BENCH_PG_RESTART_SMALL, BENCH_PG_RESTART_LARGE
// payment transactions, one log record each, filled through the store's own API), measured
// in alternation so that the ratio survives the machine's load; and a new gateway's first
// open at the large size (its replica built from the whole log) for contrast.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPgStore } from '../../gateway/store/pg.ts';
import { fillNow, fillPayments } from '../support/history-fill.ts';
import type { PostgresCluster } from '../support/postgres.ts';

const SMALL = Number(process.env.BENCH_PG_RESTART_SMALL ?? 10_000);
const LARGE = Number(process.env.BENCH_PG_RESTART_LARGE ?? 300_000);
const ROUNDS = Number(process.env.BENCH_PG_RESTART_ROUNDS ?? 3);
const ACCOUNTS = 100;

interface Opened {
  ms: number;
  applied: number;
  fresh: boolean;
  heap_mb: number;
}

async function timedOpen(database_url: string, replica_dir: string): Promise<Opened> {
  const started = performance.now();
  const store = await openPgStore(database_url, { replica_dir, poll_ms: 60_000, now: fillNow });
  const ms = performance.now() - started;
  const opened = store.replicaOpened()!;
  const heap_mb = process.memoryUsage().heapUsed / 1e6;
  await store.close();
  return { ms, applied: opened.applied, fresh: opened.fresh, heap_mb };
}

/** A database holding `txns` finalized payment transactions, and a replica of it closed cleanly. */
async function filled(
  cluster: PostgresCluster,
  dir: string,
  txns: number,
): Promise<{ url: string; replica: string; fill_s: number }> {
  const url = await cluster.createDatabase(`bench_restart_${txns}`);
  const replica = join(dir, `replica-${txns}`);
  const started = performance.now();
  const store = await openPgStore(url, {
    replica_dir: replica,
    poll_ms: 60_000,
    now: fillNow,
    checkpoint_interval_ms: 3_600_000,
  });
  await fillPayments(store, {
    accounts: ACCOUNTS,
    txns,
    per_commit: 2_048,
    lean: true,
    funds_micros: Math.ceil(txns / ACCOUNTS + 1) * 200e6,
  });
  await store.close();
  return { url, replica, fill_s: (performance.now() - started) / 1000 };
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** The restart rows, [label, value, note]. */
export async function restartRows(cluster: PostgresCluster): Promise<string[][]> {
  const dir = mkdtempSync(join(tmpdir(), 'aihub-bench-pg-restart-'));
  try {
    const small = await filled(cluster, dir, SMALL);
    const large = await filled(cluster, dir, LARGE);
    const times = { small: [] as Opened[], large: [] as Opened[] };
    for (let round = 0; round < ROUNDS; round++) {
      times.small.push(await timedOpen(small.url, small.replica));
      times.large.push(await timedOpen(large.url, large.replica));
    }
    const load_kept = loadavg()[0]!.toFixed(1);
    for (const opened of [...times.small, ...times.large])
      if (opened.fresh || opened.applied !== 0)
        throw new Error(`a kept replica was rebuilt or applied ${opened.applied} records`);
    const first = await timedOpen(large.url, join(dir, 'new-gateway'));
    const small_ms = median(times.small.map((o) => o.ms));
    const large_ms = median(times.large.map((o) => o.ms));
    const label = (n: number) => (n >= 1e6 ? `${n / 1e6}M` : `${n / 1e3}k`);
    return [
      [
        `restart, kept replica: ${label(SMALL)} log records`,
        `${small_ms.toFixed(0)} ms`,
        `median of ${ROUNDS}, 0 records applied; heap ${median(times.small.map((o) => o.heap_mb)).toFixed(0)} MB; filled in ${small.fill_s.toFixed(0)} s`,
      ],
      [
        `restart, kept replica: ${label(LARGE)} log records`,
        `${large_ms.toFixed(0)} ms`,
        `${(large_ms / small_ms).toFixed(2)} × the ${label(SMALL)} restart (${LARGE / SMALL} × the history; measured in alternation, load ${load_kept}); heap ${median(times.large.map((o) => o.heap_mb)).toFixed(0)} MB; filled in ${large.fill_s.toFixed(0)} s`,
      ],
      [
        `first open of a new gateway: ${label(LARGE)} log records`,
        `${first.ms.toFixed(0)} ms`,
        `${first.applied} records applied (the whole log, once); ${(first.ms / large_ms).toFixed(0)} × the kept restart; load ${loadavg()[0]!.toFixed(1)}`,
      ],
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
