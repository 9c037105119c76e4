// npm run bench:postgres — the PostgreSQL store (issue #30) beside the JSON-file store and,
// with BENCH_BASELINE=<git ref of the design before>, beside that design, in one run, on one
// throwaway cluster (test/support/postgres.ts; fsync on, as in production):
//   1. durable commits/s at 16 writers: the JSON-file store, the PostgreSQL store (the same
//      commit through the same Store API), and `pgbench -N` on the same cluster as the
//      reference of what this machine's PostgreSQL commits at 16 clients;
//   2. billed chat requests/s (JSON, BENCH_PG_CONNECTIONS connections in all, spread evenly)
//      through one JSON-file gateway and through 1, 2 and 3 gateways on one database, on one
//      wallet and on BENCH_PG_WALLETS (100) wallets, with the database statements and commit
//      statements per request each setup's gateways counted (/metrics);
//   3. the added latency at one connection, and the round trips per billed chat request and
//      per recharge at one connection (statements counted by the gateway).
// Beside each setup of this design, its database cost per request (test/bench/pg-cost.ts):
// statements by kind (the periodic ones apart), keys locked, transactions, tuples written,
// WAL bytes and sampled lock waits.
// Every gateway's books are checked at the end (balance + usage = credit; verify passes).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store } from '../../gateway/store/store.ts';
import { openPgStore } from '../../gateway/store/pg/store.ts';
import { createFundedAccount, runCli, runVerify, type Gateway } from '../gateway/helpers.ts';
import { PERIODIC_KINDS, SetupCost, describeCost, rechargeCost } from './pg-cost.ts';
import { postgresBinDir, startPostgres } from '../support/postgres.ts';
import { commitThroughput, fund } from './store-load.ts';
import {
  buildBaseline,
  load,
  startBenchGateway,
  startUpstream,
  writeScriptedConfig,
  type Run,
} from './bench-lib.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 2);
const WRITERS = Number(process.env.BENCH_PG_WRITERS ?? 16);
const CONNECTIONS = Number(process.env.BENCH_PG_CONNECTIONS ?? 48);
// BENCH_BASELINE=<git ref> adds the chat rows of the gateways built from that commit,
// interleaved with this build's (a before/after of a change in one run).
const BASELINE = process.env.BENCH_BASELINE;
const PARTS = Number(process.env.BENCH_PG_PARTS ?? 4);
const BEFORE_FIRST = process.env.BENCH_PG_BEFORE_FIRST === '1';
const GATEWAY_COUNTS = (process.env.BENCH_PG_GATEWAYS ?? '1,2,3').split(',').map(Number);
// One wallet (every request on one account), then requests spread over this many.
const WALLET_COUNTS = (process.env.BENCH_PG_WALLETS ?? '1,100').split(',').map(Number);
const CREDIT_UNITS = 10_000_000;

const dir = mkdtempSync(join(tmpdir(), 'aihub-bench-pg-'));
const baseline_js = BASELINE ? buildBaseline(dir, BASELINE) : undefined;
const cluster = await startPostgres();
const rows: string[][] = [];
const notes: string[] = [];
let books_ok = true;

// 1. Durable commits/s at 16 writers, side by side: the three interleaved in PARTS slices
// each (file, PostgreSQL, pgbench, file, ...), so that a change of the machine's load while
// the bench runs falls on all three alike and their ratios survive it.
{
  const slice_s = Math.max(1, Math.round(SECONDS / PARTS));
  const file_dir = join(dir, 'file-store');
  const file_store = await fund(await Store.open(file_dir, { checkpoint_every_records: 50_000 }));
  const pg_url = await cluster.createDatabase('bench_store');
  const pg_store = await fund(await openPgStore(pg_url, {}));
  const pg_log = pg_store.stats;
  const pgbench_url = await cluster.createDatabase('bench_pgbench');
  const pgbench = join(postgresBinDir() ?? '/usr/bin', 'pgbench');
  execFileSync(pgbench, ['-i', '-q', '-s', '1', pgbench_url], { stdio: 'ignore' });
  const sums = { file: 0, file_groups: 0, pg: 0, pg_batches: 0, tps: 0 };
  for (let part = 0; part < PARTS; part++) {
    const file = await commitThroughput(file_store, WRITERS, slice_s);
    sums.file += file.commits_per_s / PARTS;
    sums.file_groups += file.fsyncs_per_s / PARTS;
    const batches = pg_log.batches;
    const pg = await commitThroughput(pg_store, WRITERS, slice_s);
    sums.pg += pg.commits_per_s / PARTS;
    sums.pg_batches += (pg_log.batches - batches) / slice_s / PARTS;
    const out = execFileSync(
      pgbench,
      ['-N', '-c', String(WRITERS), '-j', '2', '-T', String(slice_s), '-n', pgbench_url],
      { encoding: 'utf8' },
    );
    sums.tps += Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? Number.NaN) / PARTS;
  }
  await file_store.close();
  rmSync(file_dir, { recursive: true, force: true });
  await pg_store.close();

  rows.push([
    `durable commits/s, ${WRITERS} writers: JSON-file store`,
    sums.file.toFixed(0),
    `${sums.file_groups.toFixed(0)} commit groups/s`,
  ]);
  rows.push([
    `durable commits/s, ${WRITERS} writers: PostgreSQL store`,
    sums.pg.toFixed(0),
    `${sums.pg_batches.toFixed(0)} PostgreSQL transactions/s; ${(sums.pg / sums.file).toFixed(2)} × the JSON-file store`,
  ]);
  rows.push([
    `pgbench -N -c ${WRITERS} on the same cluster (reference)`,
    sums.tps.toFixed(0),
    `tps; the store reaches ${((sums.pg / sums.tps) * 100).toFixed(0)}% of it`,
  ]);
}

// 2 and 3. Billed chat through real gateways on the scripted upstream.
const upstream = await startUpstream();
process.on('exit', () => upstream.proc.kill('SIGTERM'));
const config_file = writeScriptedConfig(dir, upstream.port);
const body = JSON.stringify({
  model: 'service-ai-standard-6',
  messages: [{ role: 'user', content: 'Write a haiku about a gateway that bills every token.' }],
  max_tokens: 64,
});
const direct_url = `http://127.0.0.1:${upstream.port}/v1/chat/completions`;

interface Setup {
  label: string;
  gateways: Gateway[];
  /** The funded accounts' keys: requests go to them in turn (1 wallet, or many). */
  keys: string[];
  database_url?: string;
  /** Built from BENCH_BASELINE (the design before). */
  baseline?: boolean;
}

/** `connections` spread evenly over the setup's gateways, all at once; the sum of their req/s. */
async function spread(setup: Setup, connections: number, duration_s: number): Promise<Run> {
  const per = setup.gateways.map(
    (_, i) =>
      Math.floor(connections / setup.gateways.length) +
      (i < connections % setup.gateways.length ? 1 : 0),
  );
  const runs = await Promise.all(
    setup.gateways.map((gateway, i) =>
      load(`${gateway.url}/v1/chat/completions`, per[i]!, body, {}, duration_s, setup.keys),
    ),
  );
  const total = runs.reduce((sum, run) => sum + run.ok + run.bad, 0);
  return {
    rps: runs.reduce((sum, run) => sum + run.rps, 0),
    machine_us:
      runs.reduce((sum, run) => sum + run.machine_us * (run.ok + run.bad), 0) / Math.max(1, total),
    mean_ms:
      runs.reduce((sum, run) => sum + run.mean_ms * (run.ok + run.bad), 0) / Math.max(1, total),
    p99_ms: Math.max(...runs.map((run) => run.p99_ms)),
    ok: runs.reduce((sum, run) => sum + run.ok, 0),
    bad: runs.reduce((sum, run) => sum + run.bad, 0),
  };
}

/** The gateways' write batches by outcome, summed (aihub_store_batches_total in /metrics). */
async function batchCounts(setup: Setup): Promise<string> {
  const sums: Record<string, number> = {};
  for (const gateway of setup.gateways) {
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    for (const [, outcome, value] of text.matchAll(
      /^aihub_store_batches_total\{outcome="(\w+)"[^}]*\} (\d+)/gm,
    ))
      sums[outcome!] = (sums[outcome!] ?? 0) + Number(value);
  }
  return `batches ${Object.entries(sums)
    .map(([outcome, n]) => `${outcome} ${n}`)
    .join(', ')}`;
}

/**
 * The gateways' database work so far, summed from /metrics: statements sent (this design
 * counts every one: aihub_store_statements_total; the design before does not, null) and
 * commit statements (write batches) by outcome.
 */
async function dbCounts(
  setup: Setup,
): Promise<{ statements: number | null; batches: number; conflicts: number }> {
  let statements: number | null = null;
  let batches = 0;
  let conflicts = 0;
  for (const gateway of setup.gateways) {
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    // Labelled by kind since #30's breakdown: the sum of a request's kinds (the periodic
    // ones, heartbeat and background discovery, are counted apart: pg-cost.ts).
    for (const [, kind, value] of text.matchAll(
      /^aihub_store_statements_total(?:\{kind="(\w+)"[^}]*\})? (\d+)/gm,
    ))
      if (!PERIODIC_KINDS.has(kind ?? '')) statements = (statements ?? 0) + Number(value);
    for (const [, outcome, value] of text.matchAll(
      /^aihub_store_batches_total\{outcome="(\w+)"[^}]*\} (\d+)/gm,
    )) {
      batches += Number(value);
      if (outcome === 'conflict') conflicts += Number(value);
    }
  }
  return { statements, batches, conflicts };
}

async function checkBooks(setup: Setup): Promise<void> {
  let adds_up = true;
  let usage_records = 0;
  for (const key of setup.keys) {
    const balance = (await (
      await fetch(`${setup.gateways[0]!.url}/v1/balance`, {
        headers: { authorization: `Bearer ${key}` },
      })
    ).json()) as any;
    usage_records += balance.usage.requests;
    if (Math.round((balance.balance + balance.usage.cost) * 1e6) !== CREDIT_UNITS * 1e6)
      adds_up = false;
  }
  const commit_path = setup.database_url ? `; ${await batchCounts(setup)}` : '';
  const codes = await Promise.all(setup.gateways.map((gateway) => gateway.stop()));
  const verify = setup.database_url
    ? // The design before verifies its own layout (this build's verify reads the new tables).
      await runCli(
        ['verify', '--database-url', setup.database_url],
        {},
        setup.baseline && baseline_js ? baseline_js : undefined,
      )
    : await runVerify(setup.gateways[0]!.data_dir);
  notes.push(
    `${setup.label}: ${usage_records} usage records; balance + charged = credit on every wallet: ${adds_up ? 'yes' : 'NO'}; exit codes ${codes.join(',')}${commit_path}; verify: ${verify.code === 0 ? 'ok' : `FAILED ${verify.stdout}${verify.stderr}`}`,
  );
  if (!adds_up || verify.code !== 0 || codes.some((code) => code !== 0)) books_ok = false;
}

let setups = 0;

/**
 * Every PostgreSQL setup's database cost meter (none for the JSON-file one), begun. The design
 * before's setups get one too although their cost rows are not printed: the meter samples lock
 * waits every 10 ms during a slice, and a meter on one side only took CPU from that side alone
 * (on two cores the same code read 0.84–0.95 against itself).
 */
async function setupCosts(list: Setup[]): Promise<Array<SetupCost | null>> {
  const costs = await Promise.all(
    list.map((setup) =>
      setup.database_url ? SetupCost.open(cluster.url, setup.database_url, setup.gateways) : null,
    ),
  );
  await Promise.all(costs.map((cost) => cost?.begin()));
  return costs;
}

function costRow(
  setup: Setup,
  cost: Awaited<ReturnType<SetupCost['end']>>,
  at = `${CONNECTIONS} conns`,
): string[] {
  return [
    `  database cost per billed chat, ${at}: ${setup.label}`,
    cost.request_statements.toFixed(2),
    describeCost(cost),
  ];
}

async function setupFile(): Promise<Setup> {
  const gateway = await startBenchGateway(dir, config_file, { name: `file${++setups}` });
  const { key } = await createFundedAccount(gateway, CREDIT_UNITS);
  return { label: 'JSON-file gateway', gateways: [gateway], keys: [key] };
}

async function setupPg(count: number, wallets: number, baseline?: string): Promise<Setup> {
  const database_url = await cluster.createDatabase(`bench_chat_${++setups}`);
  const gateways = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      startBenchGateway(dir, config_file, {
        name: `pg${setups}-${i + 1}`,
        args: ['--database-url', database_url],
        env: { AIHUB_GATEWAY_ID: `g${i + 1}`, AIHUB_ENCRYPTION_KEY: '11'.repeat(32) },
        ...(baseline ? { gateway_js: baseline } : {}),
      }),
    ),
  );
  const keys: string[] = [];
  for (let i = 0; i < wallets; i++)
    keys.push((await createFundedAccount(gateways[i % count]!, CREDIT_UNITS)).key);
  return {
    label: `${count} PG gateway${count > 1 ? 's' : ''}, ${wallets} wallet${wallets > 1 ? 's' : ''}${baseline ? `, before (${BASELINE!.slice(0, 12)})` : ''}`,
    gateways,
    keys,
    database_url,
    baseline: baseline !== undefined,
  };
}

try {
  await load(direct_url, CONNECTIONS, body, {}, WARMUP_S);
  const direct = await load(direct_url, CONNECTIONS, body, {}, SECONDS);
  rows.push([
    `chat req/s, ${CONNECTIONS} connections: upstream directly`,
    direct.rps.toFixed(0),
    '',
  ]);
  // Per number of wallets (one, then WALLETS spread), every setup started first (the
  // JSON-file gateway with one wallet only; this design's 1, 2 and 3 gateways; the design
  // before's with BENCH_BASELINE), then measured in PARTS slices, interleaved (file, 1, 2, 3,
  // before 1, 2, 3, file, ...): a change of load during the run falls on every setup alike.
  let file_rps = 0;
  for (const wallets of WALLET_COUNTS) {
    const chat_setups: Setup[] = wallets === 1 ? [await setupFile()] : [];
    for (const count of GATEWAY_COUNTS) chat_setups.push(await setupPg(count, wallets));
    if (baseline_js) {
      const before: Setup[] = [];
      for (const count of GATEWAY_COUNTS) before.push(await setupPg(count, wallets, baseline_js));
      // BENCH_PG_BEFORE_FIRST=1 measures the design before first in every slice (the order
      // of the two sides swapped, to see whether a side's place in the slice moves its rate).
      if (BEFORE_FIRST) chat_setups.splice(wallets === 1 ? 1 : 0, 0, ...before);
      else chat_setups.push(...before);
    }
    for (const setup of chat_setups) await spread(setup, CONNECTIONS, WARMUP_S);
    const sums = chat_setups.map(() => ({
      rps: 0,
      p99_ms: 0,
      bad: 0,
      requests: 0,
      statements: null as number | null,
      batches: 0,
      conflicts: 0,
    }));
    const costs = await setupCosts(chat_setups);
    for (let part = 0; part < PARTS; part++)
      for (const [i, setup] of chat_setups.entries()) {
        const before = setup.database_url ? await dbCounts(setup) : null;
        const measure = () => spread(setup, CONNECTIONS, SECONDS / PARTS);
        const run = await (costs[i] ? costs[i].slice(measure) : measure());
        const sum = sums[i]!;
        sum.rps += run.rps / PARTS;
        sum.p99_ms = Math.max(sum.p99_ms, run.p99_ms);
        sum.bad += run.bad;
        sum.requests += run.ok + run.bad;
        if (before) {
          const after = await dbCounts(setup);
          if (after.statements !== null && before.statements !== null)
            sum.statements = (sum.statements ?? 0) + after.statements - before.statements;
          sum.batches += after.batches - before.batches;
          sum.conflicts += after.conflicts - before.conflicts;
        }
      }
    if (wallets === 1) file_rps = sums[0]!.rps;
    const ended = await Promise.all(costs.map((cost, i) => cost?.end(sums[i]!.requests)));
    for (const [i, setup] of chat_setups.entries()) {
      const { rps, p99_ms, bad, requests, statements, batches, conflicts } = sums[i]!;
      // Against one gateway of the same design and wallets.
      const one = chat_setups.findIndex(
        (other) =>
          other.database_url !== undefined &&
          other.gateways.length === 1 &&
          other.baseline === setup.baseline,
      );
      const per = (n: number) => (n / Math.max(1, requests)).toFixed(2);
      const cost = setup.database_url
        ? `; per request: ${statements === null ? '-' : per(statements)} statements, ${per(batches)} commit statements (${conflicts} conflicts)`
        : '';
      const ratio = setup.database_url
        ? `${(rps / file_rps).toFixed(2)} × the JSON-file gateway; ${(rps / sums[one]!.rps).toFixed(2)} × its 1 gateway; `
        : '';
      rows.push([
        `billed chat req/s, ${CONNECTIONS} conns: ${setup.label}`,
        rps.toFixed(0),
        `${ratio}p99 ${p99_ms.toFixed(0)} ms, ${bad} errors${cost}`,
      ]);
      if (bad > 0) books_ok = false;
      const cost_now = ended[i];
      if (cost_now && !setup.baseline) rows.push(costRow(setup, cost_now));
    }
    for (const setup of chat_setups) await checkBooks(setup);
  }

  // Added latency at one connection: sequential requests, so 1/throughput is the time per request.
  await load(direct_url, 1, body, {}, WARMUP_S);
  const direct1 = await load(direct_url, 1, body, {}, SECONDS);
  const file = await setupFile();
  const pg = await setupPg(1, 1);
  const per_request: Record<string, number> = { direct: 1000 / direct1.rps };
  let sequential = { requests: 0, statements: 0, batches: 0 };
  for (const setup of [file, pg]) {
    await spread(setup, 1, WARMUP_S);
    const before = setup.database_url ? await dbCounts(setup) : null;
    const [cost] = setup.database_url ? await setupCosts([setup]) : [null];
    const run = await (cost
      ? cost.slice(() => spread(setup, 1, SECONDS))
      : spread(setup, 1, SECONDS));
    if (cost) rows.push(costRow(setup, await cost.end(run.ok + run.bad), '1 connection'));
    if (before) {
      const after = await dbCounts(setup);
      sequential = {
        requests: run.ok + run.bad,
        statements: (after.statements ?? 0) - (before.statements ?? 0),
        batches: after.batches - before.batches,
      };
    }
    per_request[setup.label] = 1000 / run.rps;
    if (run.bad > 0) books_ok = false;
  }
  rows.push([
    'database round trips per billed chat request, 1 connection (this design)',
    (sequential.statements / Math.max(1, sequential.requests)).toFixed(2),
    `statements sent per request, every kind but the periodic ones (target ≤ 2); ${(sequential.batches / Math.max(1, sequential.requests)).toFixed(2)} of them commit statements; ${sequential.requests} requests`,
  ]);
  const recharge = await rechargeCost(cluster, `bench_recharge_${++setups}`);
  rows.push(...recharge.rows);
  if (!recharge.ok) books_ok = false;
  const file_added = per_request[file.label]! - per_request.direct!;
  const pg_added = per_request[pg.label]! - per_request.direct!;
  rows.push([
    'ms per request at 1 connection: upstream directly',
    per_request.direct!.toFixed(3),
    '',
  ]);
  rows.push(['added ms at 1 connection: JSON-file gateway', file_added.toFixed(3), '']);
  rows.push([
    'added ms at 1 connection: PostgreSQL gateway',
    pg_added.toFixed(3),
    `${(pg_added - file_added).toFixed(3)} ms more than the JSON-file gateway`,
  ]);
  await checkBooks(file);
  await checkBooks(pg);
} finally {
  upstream.proc.kill('SIGTERM');
  await cluster.teardown();
  rmSync(dir, { recursive: true, force: true });
}

const widths = [0, 1].map((c) => Math.max(...rows.map((r) => r[c]!.length), 10));
console.log(
  `\nAIHub PostgreSQL store beside the JSON-file store, one run (${SECONDS} s per row in ${PARTS} interleaved slices; fsync on; PostgreSQL ${postgresBinDir()?.split('/').at(-2) ?? '?'} on this machine's disk; load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')})\n`,
);
for (const row of rows)
  console.log(`  ${row[0]!.padEnd(widths[0]!)}  ${row[1]!.padStart(widths[1]!)}  ${row[2]}`);
console.log('');
for (const note of notes) console.log(`  ${note}`);
if (!books_ok) process.exitCode = 1;
