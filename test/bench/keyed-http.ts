// npm run bench:keyed-http — what a careful integrator's traffic costs a restart (issue #26):
// the real gateway (dist/gateway.js, default config: sandbox providers, JSON-file store), one
// onboarded account, every recharge sent over HTTP with its own Idempotency-Key. After
// BENCH_KEYED_STEP (80,000) keyed recharges the data dir is copied aside; after twice that
// many the gateway stops. Then the two data dirs are restarted alternately, BENCH_KEYED_RESTARTS
// (5) times each (the order alternating), so that load on this shared machine lands on both
// alike: the restart time (spawn to its "listening" line, by the line's own clock) and the
// heap after the restart (a preloaded probe, heap-probe.mjs: gc, then process.memoryUsage)
// are medians. Printed: both sizes, the growth of each from the first to the second, and the
// heap growth per transaction (targets: restart grows by at most 300 ms, heap by at most 300 B
// per transaction). BENCH_BASELINE=<git ref> builds that commit's gateway (git archive) and
// runs it too, its fills and restarts interleaved with this tree's.
//
// A start reads the transactions finalized within the duplicate window
// (`payments.duplicate_window_ms`, default 2 minutes: the engine refuses a twin within it),
// which right after a fill are the fill's last 2 minutes of recharges, and only for the data
// dir filled last: restarts measured then grew with the traffic's rate, not with history
// (+3,473 ms in a run whose last two restarts, past the window, matched the first size's). So
// the second fill's data dir is restarted once at once (printed beside, not in the medians),
// and the measured restarts begin once BENCH_KEYED_SETTLE_MS (default 125,000) have passed
// since the last recharge.
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BENCH_ADMIN_TOKEN, buildBaseline, startBenchGateway } from './bench-lib.ts';
import { GATEWAY_JS, type Gateway } from '../gateway/helpers.ts';

const STEP = Number(process.env.BENCH_KEYED_STEP ?? 80_000);
const RESTARTS = Number(process.env.BENCH_KEYED_RESTARTS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_KEYED_CONNECTIONS ?? 16);
const BASELINE = process.env.BENCH_BASELINE ?? '';
const PROBE = resolve(import.meta.dirname, 'heap-probe.mjs');
/** The default duplicate window (2 minutes) and a margin: restarts are measured once the fills' last recharges are past it. */
const SETTLE_MS = Number(process.env.BENCH_KEYED_SETTLE_MS ?? 125_000);

interface Measured {
  restart_ms: number;
  heap_mb: number;
  buffers_mb: number;
  rss_mb: number;
  state_mb: number;
}

interface Tree {
  name: string;
  gateway_js: string;
  dir: string;
  config: string;
  key: string;
  sent: number;
  gateway: Gateway | null;
  results: Measured[];
}

/** A growth with its sign ("+275", "-31"). */
const signed = (value: number, digits: number) =>
  `${value >= 0 ? '+' : ''}${value.toFixed(digits)}`;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

async function call(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<{ status: number; body: any }> {
  const response = await fetch(url, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { 'content-type': 'application/json', ...init.headers },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

/** The data dir the fills go to ('gateway'), or the copy of it at the first size ('first'). */
type Copy = 'gateway' | 'first';

async function start(tree: Tree, copy: Copy = 'gateway'): Promise<Gateway> {
  const probe_file = join(tree.dir, 'heap.json');
  return startBenchGateway(tree.dir, tree.config, {
    name: copy,
    gateway_js: tree.gateway_js,
    node_args: ['--expose-gc', '--import', PROBE],
    env: { AIHUB_HEAP_PROBE_FILE: probe_file },
  });
}

/** Register → eKYC → approve → activate recharge → fund: the account every recharge is sent on. */
async function onboard(gateway: Gateway, funds_units: number): Promise<string> {
  const admin = { authorization: `Bearer ${BENCH_ADMIN_TOKEN}` };
  const registered = await call(`${gateway.url}/api/register`, {
    body: {
      email: `bench-${Date.now()}@example.com`,
      password: 'correct horse battery',
      name: 'B',
    },
  });
  if (registered.status !== 201) throw new Error(`register: ${JSON.stringify(registered.body)}`);
  const { api_key: key, account_id } = registered.body.data;
  const steps: Array<[string, Record<string, string>, unknown]> = [
    [
      '/api/kyc',
      { 'x-api-key': key },
      { name: 'Asha Verma', aadhaar_number: '2341 2341 2346', pan_number: 'AAPFU0939F' },
    ],
    [`/admin/kyc/${account_id}/approve`, admin, {}],
    [`/admin/accounts/${account_id}/services`, admin, { recharge: true }],
  ];
  for (const [path, headers, body] of steps) {
    const reply = await call(`${gateway.url}${path}`, { headers, body });
    if (reply.status !== 200) throw new Error(`${path}: ${JSON.stringify(reply.body)}`);
  }
  for (let funded = 0, n = 0; funded < funds_units; funded += 1_000_000, n++) {
    const reply = await call(`${gateway.url}/admin/accounts/${account_id}/credit`, {
      headers: admin,
      body: { amount: 1_000_000, reference: `bench-fund-${n}` },
    });
    if (reply.status !== 200) throw new Error(`credit: ${JSON.stringify(reply.body)}`);
  }
  return key;
}

/** `count` keyed recharges of 10 units, CONNECTIONS at a time, each with its own key; every one must succeed. */
async function keyedRecharges(tree: Tree, count: number): Promise<number> {
  const gateway = tree.gateway!;
  const first = tree.sent;
  let next = 0;
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < count) {
        const i = first + next++;
        // Last four digits 1010-9009: never one of the sandbox's special outcomes (0000-0005).
        const number = `98765${String(1010 + (i % 8000)).padStart(5, '0')}`;
        const reply = await call(`${gateway.url}/api/recharge`, {
          headers: { 'x-api-key': tree.key, 'idempotency-key': `bench-order-${i}` },
          body: { operator_id: 1, number, amount: 10 },
        });
        if (reply.status !== 200 || reply.body?.data?.status !== 'success') {
          if (++failed <= 3)
            console.error(`recharge ${i}: ${reply.status} ${JSON.stringify(reply.body)}`);
        }
      }
    }),
  );
  if (failed > 0) throw new Error(`${failed} of ${count} recharges did not succeed`);
  tree.sent += count;
  return count / ((performance.now() - started) / 1000);
}

/** One restart of a data dir (the gateway on it stopped): its time and the heap after it; stopped again. */
async function restartOnce(tree: Tree, copy: Copy): Promise<Measured> {
  const probe_file = join(tree.dir, 'heap.json');
  const spawned_at = Date.now();
  const gateway = await start(tree, copy);
  let measured: Measured;
  try {
    const listening = readFileSync(join(tree.dir, `${copy}.log`), 'utf8')
      .split('\n')
      .find((line) => line.includes('"msg":"listening"'))!;
    const restart_ms = Date.parse((JSON.parse(listening) as { time: string }).time) - spawned_at;
    rmSync(probe_file, { force: true });
    gateway.proc.kill('SIGUSR2');
    for (let i = 0; i < 400 && !existsSync(probe_file); i++)
      await new Promise((r) => setTimeout(r, 25));
    const usage = JSON.parse(readFileSync(probe_file, 'utf8')) as NodeJS.MemoryUsage;
    measured = {
      restart_ms,
      heap_mb: usage.heapUsed / 1e6,
      buffers_mb: usage.arrayBuffers / 1e6,
      rss_mb: usage.rss / 1e6,
      state_mb: statSync(join(gateway.data_dir, 'state.jsonl')).size / 1e6,
    };
  } catch (error) {
    await gateway.stop();
    throw error;
  }
  const code = await gateway.stop();
  if (code !== 0) throw new Error(`${tree.name}: the gateway exited with ${code}`);
  return measured;
}

function medians(samples: Measured[]): Measured {
  const of = (key: keyof Measured) => median(samples.map((s) => s[key]));
  return {
    restart_ms: of('restart_ms'),
    heap_mb: of('heap_mb'),
    buffers_mb: of('buffers_mb'),
    rss_mb: of('rss_mb'),
    state_mb: of('state_mb'),
  };
}

const load_before = loadavg();
const base = mkdtempSync(join(tmpdir(), 'aihub-bench-keyed-'));
const trees: Tree[] = [];
const rows: string[][] = [];
try {
  const sources: Array<[string, string]> = [['this tree', GATEWAY_JS]];
  if (BASELINE) sources.push([BASELINE, buildBaseline(base, BASELINE)]);
  for (const [name, gateway_js] of sources) {
    const dir = mkdtempSync(join(base, 'tree-'));
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({}));
    const tree: Tree = {
      name,
      gateway_js,
      dir,
      config,
      key: '',
      sent: 0,
      gateway: null,
      results: [],
    };
    tree.gateway = await start(tree);
    tree.key = await onboard(tree.gateway, STEP * 2 * 10 + 1_000_000);
    trees.push(tree);
  }
  // The first size: fill, stop, copy the data dir aside; then the second.
  for (let phase = 0; phase < 2; phase++) {
    for (const tree of trees) {
      tree.gateway ??= await start(tree);
      const rate = await keyedRecharges(tree, STEP);
      const code = await tree.gateway.stop();
      tree.gateway = null;
      if (code !== 0) throw new Error(`${tree.name}: the gateway exited with ${code}`);
      if (phase === 0)
        cpSync(join(tree.dir, 'gateway-data'), join(tree.dir, 'first-data'), { recursive: true });
      console.error(`${tree.name}: ${tree.sent} keyed recharges (${rate.toFixed(0)}/s)`);
    }
  }
  // The data dir filled last, restarted at once: its last recharges are within the duplicate
  // window, and the start reads them (not in the medians: see the top of this file).
  const last_recharge_ms = Date.now();
  const at_once = new Map<Tree, Measured>();
  for (const tree of trees) at_once.set(tree, await restartOnce(tree, 'gateway'));
  const settle_ms = last_recharge_ms + SETTLE_MS - Date.now();
  if (settle_ms > 0) await new Promise((r) => setTimeout(r, settle_ms));
  // Restarts of every data dir in turn, the order alternating round by round.
  const samples = new Map<Tree, [Measured[], Measured[]]>(trees.map((t) => [t, [[], []]]));
  const order = trees.flatMap((tree) =>
    (['first', 'gateway'] as const).map((c) => [tree, c] as const),
  );
  for (let round = 0; round < RESTARTS; round++) {
    for (const [tree, copy] of round % 2 ? [...order].reverse() : order) {
      const measured = await restartOnce(tree, copy);
      samples.get(tree)![copy === 'first' ? 0 : 1].push(measured);
      console.error(
        `${tree.name}, ${copy === 'first' ? STEP : 2 * STEP}: restart ${measured.restart_ms.toFixed(0)} ms, heap ${measured.heap_mb.toFixed(1)} MB`,
      );
    }
  }
  for (const tree of trees) tree.results = samples.get(tree)!.map(medians);
  for (const tree of trees) {
    for (const [k, m] of tree.results.entries())
      rows.push([
        `${tree.name}: after ${((k + 1) * STEP).toLocaleString('en')} keyed recharges`,
        `restart ${m.restart_ms.toFixed(0)} ms`,
        `heap after restart ${m.heap_mb.toFixed(1)} MB + ${m.buffers_mb.toFixed(1)} MB array buffers (rss ${m.rss_mb.toFixed(0)} MB); state.jsonl ${m.state_mb.toFixed(1)} MB`,
      ]);
    const fresh = at_once.get(tree)!;
    rows.push([
      `${tree.name}: after ${(2 * STEP).toLocaleString('en')}, restarted at once (its last recharges within the duplicate window)`,
      `restart ${fresh.restart_ms.toFixed(0)} ms`,
      `heap after restart ${fresh.heap_mb.toFixed(1)} MB; one restart, not in the medians`,
    ]);
    const [a, b] = tree.results as [Measured, Measured];
    rows.push([
      `${tree.name}: growth from ${STEP / 1000}k to ${(2 * STEP) / 1000}k (targets <= 300 ms, <= 300 B/txn)`,
      `restart ${signed(b.restart_ms - a.restart_ms, 0)} ms`,
      `heap ${signed(((b.heap_mb - a.heap_mb) * 1e6) / STEP, 0)} B per transaction (${signed(b.heap_mb - a.heap_mb, 1)} MB)`,
    ]);
  }
} finally {
  for (const tree of trees) await tree.gateway?.stop().catch(() => null);
  rmSync(base, { recursive: true, force: true });
}

const widths = [0, 1].map((c) => Math.max(...rows.map((r) => r[c]!.length), 10));
console.log(
  `\nAIHub keyed recharges over HTTP: restart and heap (medians of ${RESTARTS} restarts, ${CONNECTIONS} connections)\n`,
);
for (const row of rows)
  console.log(`  ${row[0]!.padEnd(widths[0]!)}  ${row[1]!.padStart(widths[1]!)}  ${row[2]}`);
const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
console.log(
  `\n  load average (1, 5, 15 min): at start ${load(load_before)}, at end ${load(loadavg())}`,
);
