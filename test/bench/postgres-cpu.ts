// npm run bench:postgres-cpu — where a billed chat request's CPU goes with the PostgreSQL store
// (issue #30): for 1, 2 and 3 gateways on one database and BENCH_CPU_WALLETS (100) wallets,
// BENCH_CPU_CONNECTIONS (48) connections spread over them, the gateways' process CPU and the
// cluster's (the postmaster and every backend, from /proc) per request, and the commit
// statements per request (/metrics). A request's cost is a fixed part plus the commit
// statements per request times what one statement costs, on each side: this is the figure
// that must stay flat as gateways are added for three of them to serve three times one.
//   BENCH_CPU_GATEWAYS=1,2,3  BENCH_CPU_SECONDS=8  BENCH_CPU_PER_GATEWAY=16 (connections per
//   gateway instead of a total)  BENCH_BASELINE=<git ref> (every setup also with that build)  BENCH_CPU_PROFILE=<dir> (each gateway runs with --cpu-prof
//   into it)  BENCH_CPU_STATEMENTS=1 (pg_stat_statements and track_functions on: the
//   commit function's mean time and the top statements, per setup)
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFundedAccount, type Gateway } from '../gateway/helpers.ts';
import { psql, startPostgres } from '../support/postgres.ts';
import {
  buildBaseline,
  load,
  startBenchGateway,
  startUpstream,
  writeScriptedConfig,
} from './bench-lib.ts';

const SECONDS = Number(process.env.BENCH_CPU_SECONDS ?? 8);
const WALLETS = Number(process.env.BENCH_CPU_WALLETS ?? 100);
const CONNECTIONS = Number(process.env.BENCH_CPU_CONNECTIONS ?? 48);
const PER_GATEWAY = process.env.BENCH_CPU_PER_GATEWAY
  ? Number(process.env.BENCH_CPU_PER_GATEWAY)
  : null;
const GATEWAY_COUNTS = (process.env.BENCH_CPU_GATEWAYS ?? '1,2,3').split(',').map(Number);
const PROFILE_DIR = process.env.BENCH_CPU_PROFILE;
const STATEMENTS = process.env.BENCH_CPU_STATEMENTS === '1';
// BENCH_CPU_PG_LOG=<file>: every statement logged with its parameters (log_statement=all), the
// server log copied there at the end (a real batch to replay with pgbench).
const PG_LOG = process.env.BENCH_CPU_PG_LOG;
const CREDIT_UNITS = 10_000_000;
const IDLE_MS = 3_000;
const TICK_US = 1e6 / 100; // USER_HZ

/** utime + stime of a process (with `reaped`, also its exited children's), in µs (0 when it is gone). */
function cpuUs(pid: number, reaped = false): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const own = Number(fields[11]) + Number(fields[12]);
    return (own + (reaped ? Number(fields[13]) + Number(fields[14]) : 0)) * TICK_US;
  } catch {
    return 0;
  }
}

/** The postmaster's pid and its children's (every backend and background process of the cluster). */
function clusterPids(postmaster: number): number[] {
  const pids = [postmaster];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === postmaster) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** The cluster's CPU so far: the live processes' and that of the backends that exited. */
const clusterUs = (postmaster: number): number =>
  clusterPids(postmaster).reduce((sum, pid) => sum + cpuUs(pid, pid === postmaster), 0);

async function metric(gateways: Gateway[], pattern: RegExp): Promise<number> {
  let sum = 0;
  for (const gateway of gateways) {
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    for (const found of text.matchAll(pattern)) sum += Number(found[1]);
  }
  return sum;
}

const dir = mkdtempSync(join(tmpdir(), 'aihub-bench-pgcpu-'));
// BENCH_BASELINE=<git ref>: each setup also run with gateways built from that commit, one
// after the other (before/after of a change in one run, on one cluster).
const BASELINE = process.env.BENCH_BASELINE;
const baseline_js = BASELINE ? buildBaseline(dir, BASELINE) : undefined;
const cluster = await startPostgres({
  settings: {
    ...(STATEMENTS
      ? {
          shared_preload_libraries: 'pg_stat_statements',
          'pg_stat_statements.track': 'all',
          track_functions: 'all',
        }
      : {}),
    ...(PG_LOG ? { log_statement: 'all' } : {}),
  },
});
const postmaster = Number(
  readFileSync(join(cluster.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0],
);
const upstream = await startUpstream();
process.on('exit', () => upstream.proc.kill('SIGTERM'));
const config_file = writeScriptedConfig(dir, upstream.port);
const body = JSON.stringify({
  model: 'service-ai-standard-6',
  messages: [{ role: 'user', content: 'Write a haiku about a gateway that bills every token.' }],
  max_tokens: 64,
});

const lines: string[] = [];
const say = (text: string) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${text}`);
let setup = 0;
try {
  const plan = GATEWAY_COUNTS.flatMap((count) =>
    baseline_js
      ? [
          { count, gateway_js: undefined },
          { count, gateway_js: baseline_js },
        ]
      : [{ count, gateway_js: undefined }],
  );
  for (const { count, gateway_js } of plan) {
    const database_url = await cluster.createDatabase(`bench_cpu_${++setup}`);
    const gateways = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        startBenchGateway(dir, config_file, {
          name: `cpu${setup}-${i + 1}`,
          args: ['--database-url', database_url],
          env: { AIHUB_GATEWAY_ID: `g${i + 1}`, AIHUB_ENCRYPTION_KEY: '11'.repeat(32) },
          ...(PROFILE_DIR ? { node_args: ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR] } : {}),
          ...(gateway_js ? { gateway_js } : {}),
        }),
      ),
    );
    say(`${count} gateway(s) started; funding ${WALLETS} wallets`);
    const keys: string[] = [];
    for (let i = 0; i < WALLETS; i++)
      keys.push((await createFundedAccount(gateways[i % count]!, CREDIT_UNITS)).key);
    const per = gateways.map((_, i) =>
      PER_GATEWAY !== null
        ? PER_GATEWAY
        : Math.floor(CONNECTIONS / count) + (i < CONNECTIONS % count ? 1 : 0),
    );
    const run = () =>
      Promise.all(
        gateways.map((gateway, i) =>
          load(`${gateway.url}/v1/chat/completions`, per[i]!, body, {}, SECONDS, keys),
        ),
      );
    say('warming up');
    // Warm-up: every wallet's rows in every gateway's cache, the pools' connections open.
    await Promise.all(
      gateways.map((gateway, i) =>
        load(`${gateway.url}/v1/chat/completions`, per[i]!, body, {}, 2, keys),
      ),
    );
    if (STATEMENTS)
      await psql(
        database_url,
        'CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset(); SELECT pg_stat_reset();',
      );
    // What the processes spend with no request (heartbeats, polls, the cluster's background
    // workers): at a few hundred requests a second on a loaded machine it is a visible part of
    // the per-request figure, and it grows with the number of gateways, not with the requests.
    const idle_gw_before = gateways.map((gateway) => cpuUs(gateway.proc.pid!));
    const idle_pg_before = clusterUs(postmaster);
    const idle_started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    const idle_s = (performance.now() - idle_started) / 1000;
    const idle_gw_per_s =
      gateways.reduce((sum, gateway, i) => sum + cpuUs(gateway.proc.pid!) - idle_gw_before[i]!, 0) /
      idle_s;
    const idle_pg_per_s = (clusterUs(postmaster) - idle_pg_before) / idle_s;
    const commits_before = await metric(
      gateways,
      /^aihub_store_batches_total\{outcome="(?:committed|conflict)"[^}]*\} (\d+)/gm,
    );
    const runs_re = /^aihub_store_runs_total(?:\{[^}]*\})? (\d+)/gm;
    const runs_before = await metric(gateways, runs_re);
    const gw_before = gateways.map((gateway) => cpuUs(gateway.proc.pid!));
    const pg_before = clusterUs(postmaster);
    const load_before = loadavg()[0]!;
    say('measuring');
    const started = performance.now();
    const runs = await run();
    const run_s = (performance.now() - started) / 1000;
    const pg_us = clusterUs(postmaster) - pg_before;
    const gw_us = gateways.reduce(
      (sum, gateway, i) => sum + cpuUs(gateway.proc.pid!) - gw_before[i]!,
      0,
    );
    const commits =
      (await metric(
        gateways,
        /^aihub_store_batches_total\{outcome="(?:committed|conflict)"[^}]*\} (\d+)/gm,
      )) - commits_before;
    const fn_runs = (await metric(gateways, runs_re)) - runs_before;
    const requests = runs.reduce((sum, r) => sum + r.ok, 0);
    const bad = runs.reduce((sum, r) => sum + r.bad, 0);
    const rps = runs.reduce((sum, r) => sum + r.rps, 0);
    lines.push(
      `${gateway_js ? `before (${BASELINE!.slice(0, 12)}) ` : ''}${count} gateway(s), ${WALLETS} wallets, ${per.join('+')} connections: ${rps.toFixed(0)} req/s, ${requests} ok, ${bad} failed; ` +
        `gateway CPU ${(gw_us / requests).toFixed(0)} µs/request, PostgreSQL CPU ${(pg_us / requests).toFixed(0)} µs/request; ` +
        `commit statements ${(commits / requests).toFixed(2)}/request (${commits}); ` +
        `transaction function runs ${(fn_runs / requests).toFixed(2)}/request; ` +
        `per commit statement: gateway ${(gw_us / commits).toFixed(0)} µs, PostgreSQL ${(pg_us / commits).toFixed(0)} µs; ` +
        `net of idle (gateways ${(idle_gw_per_s / 1000).toFixed(0)} ms/s, cluster ${(idle_pg_per_s / 1000).toFixed(0)} ms/s): gateway ${((gw_us - idle_gw_per_s * run_s) / requests).toFixed(0)} µs/request, PostgreSQL ${((pg_us - idle_pg_per_s * run_s) / requests).toFixed(0)} µs/request; ` +
        `load average ${load_before.toFixed(1)}`,
    );
    if (STATEMENTS) {
      lines.push(
        await psql(
          database_url,
          "SELECT funcname, calls, round(total_time::numeric / greatest(calls, 1), 3) AS mean_ms, round(self_time::numeric / greatest(calls, 1), 3) AS self_ms FROM pg_stat_user_functions WHERE schemaname = 'aihub'",
        ),
      );
      lines.push(
        await psql(
          database_url,
          "SELECT calls, round(mean_exec_time::numeric, 4) AS mean_ms, round(total_exec_time::numeric, 1) AS total_ms, left(regexp_replace(query, E'\\\\s+', ' ', 'g'), 110) AS query FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25",
        ),
      );
    }
    console.log(lines.at(-1 - (STATEMENTS ? 2 : 0)));
    await Promise.all(gateways.map((gateway) => gateway.stop()));
  }
} finally {
  if (PG_LOG) writeFileSync(PG_LOG, cluster.log());
  await cluster.teardown();
  rmSync(dir, { recursive: true, force: true });
}
console.log(lines.join('\n'));
process.exit(0);
