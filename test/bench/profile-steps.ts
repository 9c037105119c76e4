// The gateway's CPU per billed request, by step of the pipeline, from a V8 CPU profile
// (`node --cpu-prof`) of the gateway under load: `npm run bench:chat` with BENCH_PROFILE_DIR
// writes one and prints this table; or by hand,
//   node --import tsx test/bench/profile-steps.ts <file.cpuprofile> <requests> [from_us to_us]
// Each sample goes to the step of the innermost frame of its stack that belongs to one (the
// bundle's frames are mapped back to gateway/*.ts through dist/gateway.js.map): what a step
// calls (JSON, zod, the store) counts as its own, so the rows are self + child time. A sample
// with no such frame (the event loop, sockets, the HTTP parser, the garbage collector) goes to
// a row of its own. Only samples inside [from_us, to_us] (the profile's clock, which is
// process.hrtime's) count, so that start-up and warm-up do not.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * The steps, in the pipeline's order: [row, source file pattern, function name pattern].
 * The first rule a frame matches names its step; a frame that matches none is passed over.
 */
const RULES: Array<[string, RegExp, RegExp?]> = [
  [
    'auth: key lookup, IP list, rates',
    /gateway\/(chat\/steps\/(auth|rate)|accounts\/|chat\/key-rates|kernel\/rate-limit)/,
  ],
  [
    'body: read, JSON parse, validation (zod)',
    /gateway\/(chat\/steps\/(body|front)|http\/(body|raw-body|json-depth)|chat\/protocols\/|chat\/schema|chat\/protocol\.ts)|node_modules\/zod\//,
  ],
  [
    'hold: tier, token estimate, pricing, reserve',
    /gateway\/(chat\/(steps\/(admit|hold|output-limit)|billing|pricing|key-hold|reservations|config)|llm\/tokens|ledger\/)/,
    /^(?!settle|finish|unrouted|debit|recordReceivable|credit|transfer|capture|post)/,
  ],
  [
    'settlement: cost, postings, usage record staged',
    /gateway\/(chat\/(billing|steps\/settle|pricing|key-hold|key-rates)|ledger\/)/,
    /^(settle|finish|unrouted|debit|recordReceivable|costMicros|spendKey|post)/,
  ],
  [
    'upstream: router, engine, request body, answer read + JSON.parse',
    /gateway\/llm\/(router|breaker|engines\/|transport|sse-reader|types|messages)/,
  ],
  ['upstream: openai SDK', /node_modules\/openai\//],
  ['upstream: undici (pool, HTTP parser, socket writes)', /node_modules\/undici\//],
  [
    'answer: usage count, presenter, JSON.stringify, write',
    /gateway\/chat\/(steps\/|native|sse|pipeline|route)/,
  ],
  ['store: commit, journal, fdatasync callbacks', /gateway\/store\//],
  [
    'log line',
    /gateway\/(log|http\/(lean|middleware|server|linger|client-gone|connections))|node_modules\/pino/,
    /log|write|info|child|json|asJson/i,
  ],
  ['metrics', /gateway\/(chat\/metrics|http\/metrics)|node_modules\/prom-client\//],
  [
    'HTTP server: routing, request scope',
    /gateway\/(http\/|app|kernel\/request-scope|chat\/(routes|index|room))/,
  ],
];
const OTHER_GATEWAY = 'other gateway code';
const NODE_HTTP = 'node: HTTP server, sockets, streams, timers (no gateway frame)';
const GC = 'garbage collector';
const PROGRAM = 'V8/native outside JS (program)';

/** Base64 VLQ decoding of a source map's `mappings`: per generated line, [column, source] pairs. */
function decodeMappings(mappings: string): Array<Int32Array> {
  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const value = new Int8Array(128).fill(-1);
  for (let i = 0; i < B64.length; i++) value[B64.charCodeAt(i)] = i;
  const lines: Array<Int32Array> = [];
  let source = 0;
  for (const line of mappings.split(';')) {
    const pairs: number[] = [];
    let column = 0;
    for (const segment of line.split(',')) {
      if (!segment) continue;
      const fields: number[] = [];
      let shift = 0;
      let acc = 0;
      for (let i = 0; i < segment.length; i++) {
        const digit = value[segment.charCodeAt(i)]!;
        acc += (digit & 31) << shift;
        if (digit & 32) shift += 5;
        else {
          fields.push(acc & 1 ? -(acc >>> 1) : acc >>> 1);
          acc = 0;
          shift = 0;
        }
      }
      column += fields[0] ?? 0;
      if (fields.length >= 4) {
        source += fields[1]!;
        // the source line and column fields are not needed: only the file
        pairs.push(column, source);
      }
    }
    lines.push(Int32Array.from(pairs));
  }
  return lines;
}

/** Maps a position in the bundle to its source file. */
function sourceOf(
  map: { sources: string[]; lines: Array<Int32Array> },
  line: number,
  column: number,
) {
  const pairs = map.lines[line];
  if (!pairs || pairs.length === 0) return null;
  let found = -1;
  for (let i = 0; i < pairs.length; i += 2) {
    if (pairs[i]! <= column) found = pairs[i + 1]!;
    else break;
  }
  if (found === -1) found = pairs[1]!;
  return map.sources[found] ?? null;
}

export interface StepRow {
  step: string;
  us_per_request: number;
  share: number;
}

/** CPU µs per request by step, from a profile of `requests` requests in [from_us, to_us]. */
export function stepsOf(
  profile: CpuProfile,
  requests: number,
  window: { from_us: number; to_us: number } | null,
  map_file: string = resolve(import.meta.dirname, '../../dist/gateway.js.map'),
): { rows: StepRow[]; cpu_us_per_request: number; window_s: number } {
  const raw = JSON.parse(readFileSync(map_file, 'utf8')) as { sources: string[]; mappings: string };
  const map = { sources: raw.sources, lines: decodeMappings(raw.mappings) };
  const parent = new Map<number, number>();
  const by_id = new Map<number, ProfileNode>();
  for (const node of profile.nodes) {
    by_id.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const step_of_frame = new Map<number, string | null>();
  const frameStep = (node: ProfileNode): string | null => {
    if (step_of_frame.has(node.id)) return step_of_frame.get(node.id)!;
    const frame = node.callFrame;
    let step: string | null = null;
    if (frame.url.includes('gateway.js') && frame.lineNumber >= 0) {
      const file = sourceOf(map, frame.lineNumber, frame.columnNumber) ?? '';
      for (const [name, file_pattern, function_pattern] of RULES) {
        if (!file_pattern.test(file)) continue;
        if (function_pattern && !function_pattern.test(frame.functionName)) continue;
        step = name;
        break;
      }
      if (!step && /(^|\/)gateway\//.test(file)) step = OTHER_GATEWAY;
      if (step === OTHER_GATEWAY && /gateway\/(util|kernel)\//.test(file)) step = null;
    }
    step_of_frame.set(node.id, step);
    return step;
  };
  const step_of_leaf = new Map<number, string>();
  const leafStep = (id: number): string => {
    const known = step_of_leaf.get(id);
    if (known) return known;
    const leaf = by_id.get(id)!;
    let step: string | null = null;
    for (let at: number | undefined = id; at !== undefined && !step; at = parent.get(at))
      step = frameStep(by_id.get(at)!);
    if (!step) {
      const name = leaf.callFrame.functionName;
      if (name === '(garbage collector)') step = GC;
      else if (name === '(program)') step = PROGRAM;
      else if (name === '(idle)') step = '(idle)';
      else step = NODE_HTTP;
    }
    step_of_leaf.set(id, step);
    return step;
  };
  const us = new Map<string, number>();
  // PROFILE_STEPS_DETAIL=<part of a step's name>: that step's time by the frame that named it and the leaf.
  const detail_of = process.env.PROFILE_STEPS_DETAIL;
  const detail = new Map<string, number>();
  const frameName = (node: ProfileNode) => {
    const frame = node.callFrame;
    const file = frame.url.includes('gateway.js')
      ? (sourceOf(map, frame.lineNumber, frame.columnNumber) ?? '?').replace(
          /^.*?(gateway|node_modules)\//,
          '$1/',
        )
      : frame.url;
    return `${frame.functionName || '(anonymous)'} ${file}`;
  };
  let t = profile.startTime;
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0;
    t += delta;
    if (window && (t < window.from_us || t > window.to_us)) continue;
    // A sample stands for the time since the previous one.
    const step = leafStep(profile.samples[i]!);
    if (step === '(idle)') continue;
    us.set(step, (us.get(step) ?? 0) + delta);
    total += delta;
    if (detail_of && step.includes(detail_of)) {
      let named = profile.samples[i]!;
      for (let at: number | undefined = named; at !== undefined; at = parent.get(at))
        if (frameStep(by_id.get(at)!) === step) {
          named = at;
          break;
        }
      const name = `${frameName(by_id.get(named)!)}  <=  ${frameName(by_id.get(profile.samples[i]!)!)}`;
      detail.set(name, (detail.get(name) ?? 0) + delta);
    }
  }
  if (detail_of)
    for (const [name, time] of [...detail].sort((a, b) => b[1] - a[1]).slice(0, 40))
      console.log(`${(time / requests).toFixed(2).padStart(8)} µs/req  ${name}`);
  const order = [...RULES.map(([name]) => name), OTHER_GATEWAY, NODE_HTTP, GC, PROGRAM];
  const rows = order
    .filter((step) => us.has(step))
    .map((step) => ({
      step,
      us_per_request: us.get(step)! / requests,
      share: us.get(step)! / total,
    }));
  const window_s = window
    ? (Math.min(window.to_us, profile.endTime) - Math.max(window.from_us, profile.startTime)) / 1e6
    : (profile.endTime - profile.startTime) / 1e6;
  return { rows, cpu_us_per_request: total / requests, window_s };
}

/** The table as printed (and pasted into docs/benchmarks.md). */
export function formatSteps(result: ReturnType<typeof stepsOf>): string {
  const width = Math.max(...result.rows.map((row) => row.step.length), 20);
  return [
    `${'step'.padEnd(width)}  µs/req  share`,
    ...result.rows.map(
      (row) =>
        `${row.step.padEnd(width)}  ${row.us_per_request.toFixed(1).padStart(6)}  ${(row.share * 100).toFixed(0).padStart(4)}%`,
    ),
    `${'total (profiled main thread, not idle)'.padEnd(width)}  ${result.cpu_us_per_request.toFixed(1).padStart(6)}`,
  ].join('\n');
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const [file, requests, from_us, to_us] = process.argv.slice(2);
  if (!file || !requests) {
    console.error('usage: profile-steps.ts <file.cpuprofile> <requests> [from_us to_us]');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const window = from_us && to_us ? { from_us: Number(from_us), to_us: Number(to_us) } : null;
  // PROFILE_STEPS_MAP: the source map of the build that was profiled, if dist/ was rebuilt since.
  console.log(
    formatSteps(stepsOf(profile, Number(requests), window, process.env.PROFILE_STEPS_MAP)),
  );
}
