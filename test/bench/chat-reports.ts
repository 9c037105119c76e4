// npm run bench:chat-reports — issue #12's target through HTTP: billed chat requests/s
// against a real gateway holding a big history, alone and while 16 whole-range reports of
// every account (transactions, wallet, API logs in turn) run, side by side in one run.
// Target: chat with 16 reports >= 0.8 x chat alone. BENCH_REPORT_TXNS sets the history's
// size (transactions, each with its postings and API log record), BENCH_DURATION_S a round
// (alone / beside / beside / alone) and BENCH_ROUNDS how many rounds.
import { readFileSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store } from '../../gateway/store/store.ts';
import { admin, createFundedAccount } from '../gateway/helpers.ts';
import { fillNow, fillPayments } from '../support/history-fill.ts';
import {
  load,
  merge,
  startBenchGateway,
  startUpstream,
  writeScriptedConfig,
  type Run,
} from './bench-lib.ts';
import { PAYMENT_HISTORY_TAGS } from '../../gateway/payments/history-tags.ts';

const TXNS = Number(process.env.BENCH_REPORT_TXNS ?? 20_000);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 8);
/** Rounds of alone / beside / beside / alone, each DURATION_S long: more of them weather a loaded machine. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const REPORTS = 16;
const CONNECTIONS = 16;
const REPORT_NAMES = ['transactions', 'wallet', 'api-logs'];

const dir = mkdtempSync(join(tmpdir(), 'aihub-bench-chat-reports-'));

/** The history, written into the data dir the gateway named `gateway` will open. */
async function fillHistory(): Promise<void> {
  const store = await Store.open(join(dir, 'gateway-data'), {
    history_tags: PAYMENT_HISTORY_TAGS,
    now: fillNow,
    checkpoint_interval_ms: 3_600_000,
  });
  await fillPayments(store, { accounts: 20, txns: TXNS, per_commit: 1_000 });
  await store.close();
}

/** 16 loops, each asking for one whole-range report after another until `stop`; reports answered. */
function reportLoops(gateway: Parameters<typeof admin>[0]): {
  stop: () => Promise<{ done: number; refused: number }>;
} {
  let running = true;
  let done = 0;
  let refused = 0;
  const loops = Array.from({ length: REPORTS }, async (_, i) => {
    for (let n = i; running; n++) {
      const name = REPORT_NAMES[n % REPORT_NAMES.length]!;
      const reply = await admin(gateway).get(`/admin/reports/${name}?limit=50`);
      if (reply.status === 200) done++;
      else refused++;
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return { done, refused };
    },
  };
}

/** The gateway's aihub_reports_work_seconds (its reports' measured event-loop time). */
async function reportWorkSeconds(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('aihub_reports_work_seconds '));
  return Number(line?.split(' ')[1] ?? NaN);
}

const row = (label: string, run: Run) =>
  `${label.padEnd(34)} ${run.rps.toFixed(0).padStart(7)} req/s  mean ${run.mean_ms.toFixed(2)} ms  p99 ${run.p99_ms} ms  non-2xx ${run.bad}`;

async function main(): Promise<void> {
  await fillHistory();
  const upstream = await startUpstream();
  process.on('exit', () => upstream.proc.kill('SIGTERM'));
  const config_file = writeScriptedConfig(dir, upstream.port);
  const config = JSON.parse(readFileSync(config_file, 'utf8')) as Record<string, unknown>;
  config.payments = {
    reports: {
      max_concurrent_per_account: REPORTS,
      // BENCH_REPORT_SHARE: another reports.cpu_share than the default.
      ...(process.env.BENCH_REPORT_SHARE
        ? { cpu_share: Number(process.env.BENCH_REPORT_SHARE) }
        : {}),
    },
  };
  writeFileSync(config_file, JSON.stringify(config));
  const gateway = await startBenchGateway(dir, config_file);
  try {
    const { key } = await createFundedAccount(gateway, 10_000_000);
    const url = `${gateway.url}/v1/chat/completions`;
    const body = JSON.stringify({
      model: 'service-ai-standard-6',
      messages: [{ role: 'user', content: 'Write a haiku about a gateway that bills.' }],
      max_tokens: 64,
    });
    const headers = { authorization: `Bearer ${key}` };
    await load(url, CONNECTIONS, body, headers, 2);
    // Alone, beside, beside, alone: a drift of the machine over the run weighs on both sides.
    const alone: Run[] = [];
    const beside: Run[] = [];
    let reports = { done: 0, refused: 0 };
    let report_work_s = 0;
    for (const with_reports of Array.from({ length: ROUNDS }, () => [
      false,
      true,
      true,
      false,
    ]).flat()) {
      if (!with_reports) {
        alone.push(await load(url, CONNECTIONS, body, headers, DURATION_S / 2));
        continue;
      }
      const work_before = await reportWorkSeconds(gateway.url);
      const loops = reportLoops(gateway);
      beside.push(await load(url, CONNECTIONS, body, headers, DURATION_S / 2));
      report_work_s += (await reportWorkSeconds(gateway.url)) - work_before;
      const counted = await loops.stop();
      reports = { done: reports.done + counted.done, refused: reports.refused + counted.refused };
    }
    const [a, b] = [merge(alone), merge(beside)];
    console.log(
      `\nbilled chat over HTTP, ${CONNECTIONS} connections, history of ${TXNS} transactions (20 accounts)`,
    );
    console.log(row('chat alone', a));
    console.log(row(`chat beside ${REPORTS} whole-range reports`, b));
    const beside_s = DURATION_S * ROUNDS;
    console.log(
      `reports answered meanwhile: ${reports.done} (transactions, wallet, api-logs of every account), ${(reports.done / beside_s).toFixed(1)}/s; refused (429): ${reports.refused}`,
    );
    console.log(
      `event-loop time reports took while chat ran: ${report_work_s.toFixed(2)} s of ${beside_s} s (${((100 * report_work_s) / beside_s).toFixed(0)}%)`,
    );
    console.log(
      `load average (1, 5, 15 min): ${loadavg()
        .map((n) => n.toFixed(2))
        .join(' ')}`,
    );
    const ratio = b.rps / a.rps;
    console.log(
      `ratio chat with reports / alone: ${ratio.toFixed(2)} (target >= 0.8: ${ratio >= 0.8 ? 'met' : 'NOT met'})`,
    );
  } finally {
    await gateway.stop();
    upstream.proc.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
