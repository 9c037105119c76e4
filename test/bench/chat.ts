// npm run bench:chat — the chat gateway's overhead and throughput, measured side by side in
// one run: one load generator (autocannon) against a scripted upstream directly, and through
// the gateway (auth, validation, token estimate, hold, upstream call, settlement, durable
// commit, request log: billing on), non-streaming and streaming, at 1 and 64 connections.
// The gateway runs as the real process (dist/gateway.js) with a data dir on disk. For
// reference the same run measures the floor: a bare proxy in the gateway's place, and one
// fdatasync on the data dir's disk. The upstream (test/support/bench-upstream.ts) is lean
// because on this machine it shares the two cores with the gateway it stands beside.
//
// BENCH_BASELINE=<git ref> adds a second gateway built from that commit (exported with
// `git archive` into the bench's temp dir, built there with its own build script and this
// checkout's node_modules) and measures it in the same run, interleaved with this build in
// BENCH_ROUNDS parts per row (order A B B A ...): a before/after of a change, side by side
// under the same drift of a shared machine's load.
//
// BENCH_PROFILE_DIR=<dir> starts this build's gateway with `node --cpu-prof` writing there
// (BENCH_PROFILE_INTERVAL_US, default 250) and, after it stops, prints its CPU per request by
// step of the pipeline for each chat row (test/bench/profile-steps.ts: only the samples taken
// while that row's load ran); the interleaved variants and the floor are skipped then.
// BENCH_TRACING=1 adds this build once more with OpenTelemetry on at full sampling (every
// request traced, spans and metrics exported over OTLP/HTTP protobuf to a sink in its own
// process: test/bench/otlp-sink.ts), measured in the same interleaved rounds.
import { closeSync, fdatasyncSync, openSync, readFileSync, readdirSync, writeSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import {
  GATEWAY_JS,
  admin,
  createFundedAccount,
  runVerify,
  type Gateway,
} from '../gateway/helpers.js';
import { tempDir } from '../support/temp.js';
import {
  cpuMs,
  load,
  merge,
  startBenchGateway,
  startUpstream,
  writeScriptedConfig,
  buildBaseline,
  startPortkey,
  PORTKEY_VERSION,
  type Run,
} from './bench-lib.js';
import { formatSteps, stepsOf, type CpuProfile } from './profile-steps.js';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 8);
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 2);
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '1,64').split(',').map(Number);
const MODES = (process.env.BENCH_MODES ?? 'json,stream').split(',');
/** The translated protocols measured after each chat row; `BENCH_PROTOCOLS=` (empty) measures chat alone. */
const PROTOCOLS = (process.env.BENCH_PROTOCOLS ?? 'responses,messages,gemini')
  .split(',')
  .filter(Boolean);
const CREDIT_UNITS = 10_000_000;
const TARGET_ADDED_MS = 0.3;
const TARGET_RPS_64 = 5_000;
/** Issue #40: gateway CPU per billed chat at 64 connections. */
const TARGET_CPU_US_64 = 100;

/** Parts of each protocol row, interleaved with the others (order A B C D D C B A ...). */
const PROTOCOL_ROUNDS = Number(process.env.BENCH_PROTOCOL_ROUNDS ?? 4);

// Removed when the bench exits (with its data dirs and the baseline build).
const dir = tempDir('aihub-bench-chat-');

/**
 * The third turn of a tool loop: the first answer's tool call and its result replayed. With
 * `fields`, the message and part fields real clients send back (the openai SDK's message
 * objects, OpenRouter's cache_control, ...), which the gateway passes through since #16.
 */
function turnThree(fields: boolean): Record<string, unknown> {
  const call = {
    id: 'call_1',
    type: 'function',
    function: { name: 'get_weather', arguments: '{"city":"Pune"}' },
  };
  return {
    model: 'service-ai-standard-6',
    max_tokens: 64,
    tools: [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather in a city',
          parameters: {
            type: 'object',
            properties: { city: { type: 'string' } },
            required: ['city'],
          },
        },
      },
    ],
    messages: [
      {
        role: 'system',
        content: fields
          ? [
              {
                type: 'text',
                text: 'You are a terse assistant.',
                cache_control: { type: 'ephemeral' },
              },
            ]
          : 'You are a terse assistant.',
      },
      { role: 'user', content: 'What is the weather in Pune?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [call],
        ...(fields
          ? {
              annotations: [],
              reasoning_content: 'The user wants the weather.',
              refusal: null,
              function_call: null,
            }
          : {}),
      },
      {
        role: 'tool',
        tool_call_id: 'call_1',
        content: '{"temp_c":31}',
        ...(fields ? { name: 'get_weather' } : {}),
      },
      { role: 'user', content: 'Write a haiku about a gateway that bills every token.' },
    ],
    ...(fields ? { seed: 7, metadata: { trace: 'bench' }, user: 'bench-user' } : {}),
  };
}

/** Builds the gateway of `ref` in the bench's temp dir; returns its dist/gateway.js. */
/** Mean time of one small append + fdatasync on the data dir's disk, in ms: the floor of a durable commit. */
function fdatasyncMs(file: string, rounds = 400): number {
  const fd = openSync(file, 'a');
  const line = Buffer.from(
    `${JSON.stringify({ seq: 1, ops: [{ op: 'post', memo: 'x'.repeat(200) }] })}\n`,
  );
  try {
    for (let i = 0; i < 50; i++) {
      writeSync(fd, line);
      fdatasyncSync(fd);
    }
    const started = performance.now();
    for (let i = 0; i < rounds; i++) {
      writeSync(fd, line);
      fdatasyncSync(fd);
    }
    return (performance.now() - started) / rounds;
  } finally {
    closeSync(fd);
  }
}

const upstream = await startUpstream();
process.on('exit', () => upstream.proc.kill('SIGTERM'));
const config_file = writeScriptedConfig(dir, upstream.port);
const BASELINE = process.env.BENCH_BASELINE;
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;
/** With BENCH_PROFILE_DIR: each profiled row's load, on the profile's clock (process.hrtime, µs). */
const profiled: Array<{ what: string; from_us: number; to_us: number; requests: number }> = [];
const hrtimeUs = () => Number(process.hrtime.bigint() / 1000n);
const TRACING = Boolean(process.env.BENCH_TRACING);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (BASELINE || TRACING ? 4 : 1));
const sink = TRACING ? await startUpstream('./otlp-sink.ts') : null;
if (sink) process.on('exit', () => sink.proc.kill('SIGTERM'));
const baseline_label = BASELINE ? `baseline ${BASELINE.slice(0, 12)}` : '';
/** The gateways measured: this build, and with BENCH_BASELINE the build of that commit. */
const gateways: Array<{ label: string; gateway: Gateway; key: string; ok: number }> = [];
for (const [label, gateway_js, env] of [
  ['this build', GATEWAY_JS, {}],
  ...(BASELINE ? [[baseline_label, buildBaseline(dir, BASELINE), {}]] : []),
  ...(sink
    ? [
        [
          'tracing on',
          GATEWAY_JS,
          {
            OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sink.port}`,
            OTEL_TRACES_SAMPLER: 'always_on',
            OTEL_METRIC_EXPORT_INTERVAL: '5000',
          },
        ],
      ]
    : []),
] as Array<[string, string, Record<string, string>]>) {
  const gateway = await startBenchGateway(dir, config_file, {
    name: `gateway${gateways.length}`,
    gateway_js,
    ...(PROFILE_DIR && gateways.length === 0
      ? {
          node_args: [
            '--cpu-prof',
            `--cpu-prof-dir=${PROFILE_DIR}`,
            `--cpu-prof-interval=${process.env.BENCH_PROFILE_INTERVAL_US ?? 250}`,
          ],
        }
      : {}),
    env,
  });
  const { key, account_id } = await createFundedAccount(gateway, CREDIT_UNITS);
  gateways.push({ label, gateway, key, ok: 0 });
  // BENCH_KEY_LIMIT=1: the same gateway again, through a key with a monthly limit (issue #39:
  // at most 5 % more CPU per billed request), measured side by side with the key without one.
  if (process.env.BENCH_KEY_LIMIT && !BASELINE)
    gateways.push({
      label: 'limited key',
      gateway,
      key: (
        await admin(gateway).post(`/admin/accounts/${account_id}/keys`, {
          name: 'bench-limited',
          limit: CREDIT_UNITS,
          limit_reset: 'monthly',
        })
      ).body.key as string,
      ok: 0,
    });
}
type Measured = (typeof gateways)[number] | NonNullable<typeof portkey>;
// Portkey's gateway beside this one (BENCH_PORTKEY=0 leaves it out): installed into .tools by
// the bench if it is not there yet; a failure to install or start it only drops its row.
let portkey: (Awaited<ReturnType<typeof startPortkey>> & { label: string; ok: number }) | null =
  null;
if (process.env.BENCH_PORTKEY !== '0' && !PROFILE_DIR) {
  try {
    portkey = {
      ...(await startPortkey(upstream.port)),
      label: `Portkey ${PORTKEY_VERSION} (no billing)`,
      ok: 0,
    };
    process.on('exit', () => portkey?.proc.kill('SIGTERM'));
  } catch (error) {
    console.log(`Portkey's row is left out: ${(error as Error).message.slice(0, 300)}`);
  }
}
const floor = await startUpstream('./floor-proxy.ts', [String(upstream.port)]);
process.on('exit', () => floor.proc.kill('SIGTERM'));
// Node's HTTP server and an undici pool with nothing else: the stack's own floor.
const floor_http = await startUpstream('./floor-http.ts', [String(upstream.port)]);
process.on('exit', () => floor_http.proc.kill('SIGTERM'));

const rows: string[][] = [];
console.log(
  `load average at the start: ${loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')}`,
);
const floor_rows: string[][] = [];
let floor_added_ms = Number.NaN;
let floor_http_added_ms = Number.NaN;
/** CPU per request at 64 connections, json: this build's gateway and Node's HTTP floor (floor-http.ts). */
let gateway_cpu_us_64 = Number.NaN;
let floor_http_cpu_us_64 = Number.NaN;
const fsync_ms = fdatasyncMs(join(dir, 'fsync-probe'));
let failures = 0;
const verdicts: string[] = [];
const budgets: string[] = [];
/** json/stream @ conns → req/s of each gateway, for the side-by-side ratios. */
const side_by_side: Array<{
  what: string;
  rps: number[];
  cpu_us: number[];
  portkey?: { rps: number; cpu_us: number };
}> = [];
try {
  for (const stream of MODES.map((mode) => mode === 'stream')) {
    const body = JSON.stringify({
      model: 'service-ai-standard-6',
      messages: [
        { role: 'user', content: 'Write a haiku about a gateway that bills every token.' },
      ],
      max_tokens: 64,
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    });
    for (const connections of CONNECTIONS) {
      const direct_url = `http://127.0.0.1:${upstream.port}/v1/chat/completions`;
      await load(direct_url, connections, body, {}, WARMUP_S);
      const direct = await load(direct_url, connections, body, {}, DURATION_S);
      failures += direct.bad;
      const pair: (typeof side_by_side)[number] = {
        what: `${stream ? 'stream' : 'json'} @${connections}`,
        rps: [],
        cpu_us: [],
      };
      side_by_side.push(pair);
      // The gateways, and Portkey's beside them (its own server, no billing).
      // Portkey 1.15.2 on Node 20 answers every streamed request 500 ("TypeError: immutable"
      // in its tryTargetsRecursively), so it is measured on JSON rows only.
      const measured_list: Measured[] = [...gateways, ...(portkey && !stream ? [portkey] : [])];
      const target = (measured: Measured) =>
        'gateway' in measured
          ? {
              url: `${measured.gateway.url}/v1/chat/completions`,
              auth: { authorization: `Bearer ${measured.key}` },
            }
          : { url: `${measured.url}/v1/chat/completions`, auth: measured.headers };
      const pidOf = (measured: Measured) =>
        'gateway' in measured ? measured.gateway.proc.pid! : measured.proc.pid!;
      for (const measured of measured_list)
        measured.ok += (
          await load(target(measured).url, connections, body, target(measured).auth, WARMUP_S)
        ).ok;
      // With a baseline, each gateway's time is cut into ROUNDS parts run in the order A B B A
      // ...: the machine's load drifts (it is shared), and both builds see the same drift.
      const parts = new Map<Measured, { runs: Run[]; cpu_ms: number }>(
        measured_list.map((g) => [g, { runs: [], cpu_ms: 0 }]),
      );
      for (let round = 0; round < ROUNDS; round++) {
        for (const measured of round % 2 === 0 ? measured_list : [...measured_list].reverse()) {
          const part = parts.get(measured)!;
          const cpu_before_ms = cpuMs(pidOf(measured));
          const from_us = hrtimeUs();
          const run = await load(
            target(measured).url,
            connections,
            body,
            target(measured).auth,
            DURATION_S / ROUNDS,
          );
          part.runs.push(run);
          part.cpu_ms += cpuMs(pidOf(measured)) - cpu_before_ms;
          if (PROFILE_DIR && measured === gateways[0])
            profiled.push({
              what: `${pair.what} (${(run.ok + run.bad).toLocaleString('en')} requests, ${cpu_before_ms.toFixed(0)} ms CPU before)`,
              from_us,
              to_us: hrtimeUs(),
              requests: run.ok + run.bad,
            });
        }
      }
      for (const measured of measured_list) {
        const part = parts.get(measured)!;
        const through = merge(part.runs);
        const cpu_us_per_request = (part.cpu_ms * 1000) / Math.max(1, through.ok + through.bad);
        measured.ok += through.ok;
        // Portkey's errors are shown in its row; they are not this gateway's failures.
        if (measured !== portkey) failures += through.bad;
        if (measured === portkey) {
          pair.portkey = { rps: through.rps, cpu_us: cpu_us_per_request };
        } else {
          pair.rps.push(through.rps);
          pair.cpu_us.push(cpu_us_per_request);
        }
        // At one connection requests are sequential, so 1/throughput is the exact mean time per request.
        const added_ms =
          connections === 1
            ? 1000 / through.rps - 1000 / direct.rps
            : through.mean_ms - direct.mean_ms;
        rows.push([
          measured.label,
          stream ? 'stream' : 'json',
          String(connections),
          direct.rps.toFixed(0),
          through.rps.toFixed(0),
          `${((through.rps / direct.rps) * 100).toFixed(0)}%`,
          (connections === 1 ? 1000 / direct.rps : direct.mean_ms).toFixed(3),
          (connections === 1 ? 1000 / through.rps : through.mean_ms).toFixed(3),
          added_ms.toFixed(3),
          through.p99_ms.toFixed(0),
          cpu_us_per_request.toFixed(0),
          String(through.bad),
        ]);
        if (measured !== gateways[0]) continue;
        if (connections === 1)
          verdicts.push(
            `${stream ? 'stream' : 'json'} @1: added ${added_ms.toFixed(3)} ms (target ≤ ${TARGET_ADDED_MS}) ${added_ms <= TARGET_ADDED_MS ? 'MET' : 'MISSED'}`,
          );
        if (connections === 64) {
          // What the target leaves for the gateway: this machine's cores, less what the load
          // generator, the upstream and the kernel spend per request without any gateway.
          const budget_us = (availableParallelism() * 1e6) / TARGET_RPS_64 - direct.machine_us;
          budgets.push(
            `${stream ? 'stream' : 'json'} @64: without the gateway each request costs this machine ${direct.machine_us.toFixed(0)} µs of CPU (load generator, upstream, kernel); ` +
              `at ${TARGET_RPS_64} req/s its ${availableParallelism()} cores leave ${budget_us.toFixed(0)} µs per request for the gateway; through the gateway each request cost ${(through.machine_us - direct.machine_us).toFixed(0)} µs more`,
          );
          verdicts.push(
            `${stream ? 'stream' : 'json'} @64: ${through.rps.toFixed(0)} req/s through the gateway (target ≥ ${TARGET_RPS_64}) ${through.rps >= TARGET_RPS_64 ? 'MET' : 'MISSED'}`,
          );
          if (!stream) {
            gateway_cpu_us_64 = cpu_us_per_request;
            verdicts.push(
              `json @64: gateway CPU ${cpu_us_per_request.toFixed(0)} µs/req (target ≤ ${TARGET_CPU_US_64}) ${cpu_us_per_request <= TARGET_CPU_US_64 ? 'MET' : 'MISSED'}`,
            );
          }
        }
      }
      if (!PROFILE_DIR) {
        // This build again, in rounds interleaved (A B C D D C B A ...) so that every variant
        // sees the same drift of the shared machine: plain chat; a third turn of a tool loop
        // as clients replay it, once with only the fields every build accepted and once with
        // the fields #16 passes through (annotations, reasoning_content, refusal and
        // function_call null, cache_control on a text part, name on the tool message, seed,
        // metadata, user); and the same question in the Responses, Messages and Gemini protocols,
        // translated to the same chat-completions upstream. Gateway CPU per request of each,
        // and its ratio to plain chat's in the same rounds.
        const measured = gateways[0]!;
        const auth = { authorization: `Bearer ${measured.key}` };
        const question = 'Write a haiku about a gateway that bills every token.';
        const variants: Array<{ name: string; path: string; body: string; target: number | null }> =
          [
            { name: 'chat', path: '/v1/chat/completions', body, target: null },
            {
              name: 'chat turn 3',
              path: '/v1/chat/completions',
              body: JSON.stringify({
                ...turnThree(false),
                ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
              }),
              target: null,
            },
            {
              name: 'chat turn 3 + fields',
              path: '/v1/chat/completions',
              body: JSON.stringify({
                ...turnThree(true),
                ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
              }),
              target: null,
            },
            {
              name: 'responses',
              path: '/v1/responses',
              body: JSON.stringify({
                model: 'service-ai-standard-6',
                input: question,
                max_output_tokens: 64,
                ...(stream ? { stream: true } : {}),
              }),
              target: 1.2,
            },
            {
              name: 'messages',
              path: '/v1/messages',
              body: JSON.stringify({
                model: 'service-ai-standard-6',
                max_tokens: 64,
                messages: [{ role: 'user', content: question }],
                ...(stream ? { stream: true } : {}),
              }),
              target: 1.2,
            },
            {
              name: 'gemini',
              path: stream
                ? '/v1beta/models/service-ai-standard-6:streamGenerateContent?alt=sse'
                : '/v1beta/models/service-ai-standard-6:generateContent',
              body: JSON.stringify({
                contents: [{ role: 'user', parts: [{ text: question }] }],
                generationConfig: { maxOutputTokens: 64 },
              }),
              target: 1.2,
            },
          ].filter((variant) => variant.target === null || PROTOCOLS.includes(variant.name));
        for (const variant of variants)
          measured.ok += (
            await load(
              `${measured.gateway.url}${variant.path}`,
              connections,
              variant.body,
              auth,
              WARMUP_S,
            )
          ).ok;
        const measures = new Map(
          variants.map((variant) => [variant, { runs: [] as Run[], cpu_ms: 0 }]),
        );
        for (let round = 0; round < PROTOCOL_ROUNDS; round++) {
          for (const variant of round % 2 === 0 ? variants : [...variants].reverse()) {
            const part = measures.get(variant)!;
            const cpu_at_ms = cpuMs(measured.gateway.proc.pid!);
            part.runs.push(
              await load(
                `${measured.gateway.url}${variant.path}`,
                connections,
                variant.body,
                auth,
                DURATION_S / PROTOCOL_ROUNDS,
              ),
            );
            part.cpu_ms += cpuMs(measured.gateway.proc.pid!) - cpu_at_ms;
          }
        }
        const cpuPerRequest = (variant: (typeof variants)[number]) => {
          const part = measures.get(variant)!;
          const run = merge(part.runs);
          return { run, cpu_us: (part.cpu_ms * 1000) / Math.max(1, run.ok + run.bad) };
        };
        const chat_cpu_us = cpuPerRequest(variants[0]!).cpu_us;
        for (const variant of variants) {
          const { run, cpu_us } = cpuPerRequest(variant);
          measured.ok += run.ok;
          failures += run.bad;
          const run_added_ms =
            connections === 1 ? 1000 / run.rps - 1000 / direct.rps : run.mean_ms - direct.mean_ms;
          rows.push([
            `${measured.label}, ${variant.name} (interleaved)`,
            stream ? 'stream' : 'json',
            String(connections),
            direct.rps.toFixed(0),
            run.rps.toFixed(0),
            `${((run.rps / direct.rps) * 100).toFixed(0)}%`,
            (connections === 1 ? 1000 / direct.rps : direct.mean_ms).toFixed(3),
            (connections === 1 ? 1000 / run.rps : run.mean_ms).toFixed(3),
            run_added_ms.toFixed(3),
            run.p99_ms.toFixed(0),
            cpu_us.toFixed(0),
            String(run.bad),
          ]);
          if (variant === variants[0]) continue;
          const ratio = cpu_us / chat_cpu_us;
          const judged =
            variant.target === null
              ? ''
              : ` (target ≤ ${variant.target}) ${ratio <= variant.target ? 'MET' : 'MISSED'}`;
          verdicts.push(
            `${stream ? 'stream' : 'json'} ${variant.name} @${connections}: gateway CPU ${cpu_us.toFixed(0)} µs/req = ${ratio.toFixed(2)} × plain chat's ${chat_cpu_us.toFixed(0)}${judged}`,
          );
        }
        const [, plain_turn, full_turn] = variants;
        const fields_ratio = cpuPerRequest(full_turn!).cpu_us / cpuPerRequest(plain_turn!).cpu_us;
        verdicts.push(
          `${stream ? 'stream' : 'json'} @${connections}: the pass-through fields of a replayed turn cost ${fields_ratio.toFixed(2)} × the same turn without them`,
        );
      }
      if (!stream && !PROFILE_DIR) {
        // The reference: a bare proxy (no billing, no fsync) in the gateway's place, same run.
        for (const [what, proxy] of [
          ['raw sockets', floor],
          ['node:http + undici pool', floor_http],
        ] as const) {
          const floor_url = `http://127.0.0.1:${proxy.port}/v1/chat/completions`;
          await load(floor_url, connections, body, {}, WARMUP_S);
          const cpu_at = cpuMs(proxy.proc.pid!);
          const bare = await load(floor_url, connections, body, {}, DURATION_S);
          const cpu_us = ((cpuMs(proxy.proc.pid!) - cpu_at) * 1000) / Math.max(1, bare.ok);
          failures += bare.bad;
          const bare_added_ms =
            connections === 1 ? 1000 / bare.rps - 1000 / direct.rps : bare.mean_ms - direct.mean_ms;
          floor_rows.push([
            what,
            String(connections),
            direct.rps.toFixed(0),
            bare.rps.toFixed(0),
            bare_added_ms.toFixed(3),
            cpu_us.toFixed(0),
          ]);
          if (connections === 1 && proxy === floor) floor_added_ms = bare_added_ms;
          if (connections === 1 && proxy === floor_http) floor_http_added_ms = bare_added_ms;
          if (connections === 64 && proxy === floor_http) floor_http_cpu_us_64 = cpu_us;
        }
      }
    }
  }
} finally {
  const balances = await Promise.all(
    gateways.map((g) =>
      fetch(`${g.gateway.url}/v1/balance`, { headers: { authorization: `Bearer ${g.key}` } }).then(
        (r) => r.json() as Promise<any>,
      ),
    ),
  );
  // A gateway measured through two keys (BENCH_KEY_LIMIT) is stopped once.
  const stopping = new Map<Gateway, Promise<number | null>>();
  const codes = await Promise.all(
    gateways.map((g) => {
      if (!stopping.has(g.gateway)) stopping.set(g.gateway, g.gateway.stop());
      return stopping.get(g.gateway)!;
    }),
  );
  upstream.proc.kill('SIGTERM');
  floor.proc.kill('SIGTERM');
  floor_http.proc.kill('SIGTERM');
  portkey?.proc.kill('SIGTERM');
  const header = [
    'gateway',
    'mode',
    'conns',
    'direct req/s',
    'gateway req/s',
    'ratio',
    'direct ms/req',
    'gateway ms/req',
    'added ms',
    'gw p99 ms',
    'gw CPU µs/req',
    'gw errors',
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(
    `\nchat gateway vs scripted upstream, ${DURATION_S} s per run, billing on (standard tier, max_tokens 64), data dir on ${dir}`,
  );
  console.log(line(header));
  for (const row of rows) console.log(line(row));
  console.log(`(ms/req at 1 connection = 1/throughput; at 64 = autocannon's mean latency)`);
  if (floor_rows.length > 0) {
    console.log(
      `\nfloor, same run: bare proxies in the gateway's place (no auth, billing, journal or logs), json: raw sockets (test/bench/floor-proxy.ts) and Node's HTTP server with an undici pool (test/bench/floor-http.ts)`,
    );
    const floor_header = [
      'proxy',
      'conns',
      'direct req/s',
      'proxy req/s',
      'added ms',
      'CPU µs/req',
    ];
    const floor_widths = floor_header.map((h, i) =>
      Math.max(h.length, ...floor_rows.map((r) => r[i]!.length)),
    );
    console.log(floor_header.map((c, i) => c.padStart(floor_widths[i]!)).join('  '));
    for (const row of floor_rows)
      console.log(row.map((c, i) => c.padStart(floor_widths[i]!)).join('  '));
  }
  console.log(
    `one append + fdatasync on this disk: ${fsync_ms.toFixed(3)} ms (a settlement is durable before the answer, so at one connection it is on every request's path)`,
  );
  if (Number.isFinite(floor_added_ms))
    console.log(
      `at one connection no durable gateway on this machine can add less than the bare proxy + one fdatasync = ${(floor_added_ms + fsync_ms).toFixed(3)} ms`,
    );
  if (Number.isFinite(floor_http_added_ms))
    console.log(
      `at one connection no durable gateway on Node's HTTP server and an undici pool can add less than ${(floor_http_added_ms + fsync_ms).toFixed(3)} ms here (that floor + one fdatasync)`,
    );
  if (Number.isFinite(gateway_cpu_us_64) && Number.isFinite(floor_http_cpu_us_64))
    console.log(
      `json @64: the gateway's CPU above Node's HTTP server and an undici pool doing nothing but forward (same run): ${gateway_cpu_us_64.toFixed(0)} - ${floor_http_cpu_us_64.toFixed(0)} = ${(gateway_cpu_us_64 - floor_http_cpu_us_64).toFixed(0)} µs/req (auth, validation, the hold, two ledger transactions, the journal, the usage record, the log line, metrics, a larger answer)`,
    );
  for (const b of budgets) console.log(b);
  for (const v of verdicts) console.log(v);
  if (gateways.length > 1) {
    const others = gateways.slice(1).map((g) => g.label);
    console.log(
      `\nside by side, same run: ${gateways.map((g) => g.label).join(' vs ')} (req/s through each, then gateway CPU µs per request; ratios = ${gateways[0]!.label} / ${others.join(', ')})`,
    );
    const ratios = (values: number[]) =>
      values
        .slice(1)
        .map((value) => `${(values[0]! / value).toFixed(2)}×`)
        .join(' ');
    for (const pair of side_by_side) {
      const rps = `${pair.rps.map((value) => value.toFixed(0).padStart(7)).join('  ')}  ${ratios(pair.rps)}`;
      const cpu = `${pair.cpu_us.map((value) => value.toFixed(0).padStart(6)).join('  ')}  ${ratios(pair.cpu_us)}`;
      console.log(`${pair.what.padEnd(10)}  req/s ${rps}   CPU µs/req ${cpu}`);
    }
  }
  if (portkey) {
    console.log(
      `\nside by side, same run: ${gateways[0]!.label} (billing on, a durable commit per request) vs ${portkey.label} (its own server, the same upstream): req/s, then CPU µs per request; ratios = this build / Portkey (issue #40's targets: ≥ 3× req/s at 1 connection, ≥ 5× at 64)`,
    );
    for (const pair of side_by_side) {
      if (!pair.portkey) continue;
      console.log(
        `${pair.what.padEnd(10)}  req/s ${pair.rps[0]!.toFixed(0).padStart(7)}  ${pair.portkey.rps.toFixed(0).padStart(7)}  ${(pair.rps[0]! / pair.portkey.rps).toFixed(2)}×   CPU µs/req ${pair.cpu_us[0]!.toFixed(0).padStart(6)}  ${pair.portkey.cpu_us.toFixed(0).padStart(6)}  ${(pair.cpu_us[0]! / pair.portkey.cpu_us).toFixed(2)}×`,
      );
    }
  }
  // The bill must add up to the micro-unit: credit = balance + everything charged.
  let books_ok = true;
  for (const [index, measured] of gateways.entries()) {
    const balance = balances[index];
    const adds_up = Math.round((balance.balance + balance.usage.cost) * 1e6) === CREDIT_UNITS * 1e6;
    console.log(
      `${measured.label}: billing: ${balance.usage.requests} usage records for ${measured.ok} gateway 2xx answers; balance ${balance.balance} + charged ${balance.usage.cost} = credit ${CREDIT_UNITS}: ${adds_up ? 'yes' : 'NO'}`,
    );
    const verify = await runVerify(measured.gateway.data_dir);
    console.log(
      `${measured.label}: gateway exit ${codes[index]}; verify: ${verify.code === 0 ? 'ok' : `FAILED\n${verify.stdout}${verify.stderr}`}`,
    );
    if (!adds_up || verify.code !== 0) books_ok = false;
  }
  if (PROFILE_DIR) {
    // The gateway wrote its profile when it stopped (above).
    const file = readdirSync(PROFILE_DIR)
      .filter((name) => name.endsWith('.cpuprofile'))
      .map((name) => join(PROFILE_DIR, name))
      .sort()
      .at(-1);
    if (file) {
      const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
      for (const row of profiled) {
        const steps = stepsOf(profile, row.requests, row);
        console.log(
          `\ngateway CPU by step, ${row.what}, ${steps.window_s.toFixed(1)} s profiled (${file} ${row.requests} ${row.from_us} ${row.to_us}):`,
        );
        console.log(formatSteps(steps));
      }
    } else console.log(`no .cpuprofile in ${PROFILE_DIR}`);
  }
  console.log(
    `load average at the end: ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}`,
  );
  if (!books_ok || failures > 0) process.exitCode = 1;
}
