// BENCH_BASELINE=<git ref> for `npm run bench:store`: the write rows (durable commits/s, commit
// latency with history, checkpoint pause) of this tree and of the tree at <ref>, each in a
// fresh process of its own bench:store, interleaved round by round (this, ref; ref, this; ...)
// so that load on the machine lands on both columns alike; the medians side by side with
// their ratio. The ref's tree is a `git worktree` in a temp dir sharing this clone's
// node_modules, removed at the end. BENCH_ONLY=ab with BENCH_BASELINE=<ref> instead runs
// the commits/s rows of both trees alternated in one process (store-ab-child.ts, `abRows`).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** The history behind the second latency row (BENCH_HISTORY, as both trees' benches read it). */
const BIG = `${Number(process.env.BENCH_HISTORY ?? 1_000_000) / 1e6}M`;
/** The rows compared, by the start of their label (both trees print them under these names). */
const WRITE_ROWS = [
  'durable commits/s, 1 writer',
  'durable commits/s, 16 writers',
  'durable commits/s, 64 writers',
  'p50 commit latency, 1k history records',
  `p50 commit latency, ${BIG} history records`,
  `latency ratio ${BIG} / 1k`,
  'checkpoint of ',
  'synchronous copy + serialization',
  'pause ratio',
];

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** Each compared row's whole label as printed (some carry figures, e.g. the document's size). */
const printed = new Map<string, string>();

/** Runs one tree's bench:store (write rows only) and reads its table: label → first number of the value column. */
function writeRowsOf(tree: string): Map<string, number> {
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', join(tree, 'test/bench/store.ts')],
    {
      cwd: tree,
      encoding: 'utf8',
      // The moved-accounts rows are this tree's only (nothing to compare): skipped here.
      env: { ...process.env, BENCH_ONLY: 'write', BENCH_BASELINE: '', BENCH_MOVED_ACCOUNTS: '0' },
      maxBuffer: 1 << 22,
    },
  );
  if (result.status !== 0)
    throw new Error(`bench:store in ${tree} failed (${result.status}): ${result.stderr}`);
  const values = new Map<string, number>();
  for (const line of result.stdout.split('\n')) {
    const [label, value] = line.trim().split(/\s{2,}/);
    const row = WRITE_ROWS.find((name) => label?.startsWith(name));
    if (row === undefined || value === undefined) continue;
    values.set(row, Number.parseFloat(value));
    if (!printed.has(row)) printed.set(row, label!);
  }
  return values;
}

const HERE = resolve(import.meta.dirname, '../..');

/** Runs `fn` with the tree of `ref` checked out in a temporary worktree (sharing node_modules), removed after. */
export function withTreeAt<T>(ref: string, fn: (tree: string, commit: string) => T): T {
  const commit = execFileSync('git', ['-C', HERE, 'rev-parse', '--short', ref], {
    encoding: 'utf8',
  }).trim();
  const tree = join(mkdtempSync(join(tmpdir(), 'aihub-bench-baseline-')), 'tree');
  execFileSync('git', ['-C', HERE, 'worktree', 'add', '--detach', tree, commit], {
    stdio: 'ignore',
  });
  try {
    symlinkSync(join(HERE, 'node_modules'), join(tree, 'node_modules'));
    return fn(tree, commit);
  } finally {
    execFileSync('git', ['-C', HERE, 'worktree', 'remove', '--force', tree], { stdio: 'ignore' });
    rmSync(resolve(tree, '..'), { recursive: true, force: true });
  }
}

/** The comparison rows: [label, this tree's median, `baseline <median>; ratio <this/baseline>`]. */
export function baselineRows(ref: string, rounds: number): string[][] {
  const here = HERE;
  const mine: Array<Map<string, number>> = [];
  const theirs: Array<Map<string, number>> = [];
  const commit = withTreeAt(ref, (tree, commit) => {
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? [here, tree] : [tree, here];
      for (const dir of order) (dir === here ? mine : theirs).push(writeRowsOf(dir));
    }
    return commit;
  });
  const rows: string[][] = [
    [
      `write rows: this tree vs ${ref} (${commit}), medians of ${rounds} interleaved runs each`,
      'this tree',
      'baseline; ratio this / baseline',
    ],
  ];
  for (const name of WRITE_ROWS) {
    const a = median(mine.map((m) => m.get(name) ?? Number.NaN));
    const b = median(theirs.map((m) => m.get(name) ?? Number.NaN));
    rows.push([
      `  ${printed.get(name) ?? name}`,
      String(+a.toPrecision(5)),
      `${+b.toPrecision(5)}; ratio ${(a / b).toFixed(2)}`,
    ]);
  }
  return rows;
}

interface AbSide {
  commits: number;
  ms: number;
  cpu_us: number;
}

/**
 * BENCH_ONLY=ab: durable commits/s of this tree's store and `ref`'s at 1, 16 and 64 writers,
 * alternated in one process in slices of `slice_ms` (store-ab-child.ts), `runs` fresh
 * processes per writer count. Rows: [label, this tree's commits/s, `baseline ...; ratio`],
 * each ratio that of all runs' commits per second, with each run's ratio, the median ratio
 * of slice pairs and the process CPU per commit of each side beside it.
 */
export function abRows(ref: string, runs: number, slices: number, slice_ms: number): string[][] {
  const child = join(import.meta.dirname, 'store-ab-child.ts');
  return withTreeAt(ref, (tree, commit) => {
    const rows: string[][] = [
      [
        `commits/s, this tree vs ${ref} (${commit}) alternated in one process: ${runs} runs of ${slices} slices of ${slice_ms} ms each`,
        'this tree',
        'baseline; ratio (each run; median slice pair); CPU per commit this / baseline',
      ],
    ];
    for (const writers of [1, 16, 64]) {
      const here: AbSide = { commits: 0, ms: 0, cpu_us: 0 };
      const there: AbSide = { commits: 0, ms: 0, cpu_us: 0 };
      const run_ratios: number[] = [];
      const slice_ratios: number[] = [];
      for (let run = 0; run < runs; run++) {
        const args = [HERE, tree, String(writers), String(slice_ms), String(slices)];
        const result = spawnSync(process.execPath, ['--import', 'tsx', child, ...args], {
          cwd: HERE,
          encoding: 'utf8',
        });
        if (result.status !== 0)
          throw new Error(`store-ab-child failed (${result.status}): ${result.stderr}`);
        const out = JSON.parse(result.stdout) as {
          here: AbSide;
          there: AbSide;
          slice_ratios: number[];
        };
        for (const [sum, side] of [
          [here, out.here],
          [there, out.there],
        ] as const) {
          sum.commits += side.commits;
          sum.ms += side.ms;
          sum.cpu_us += side.cpu_us;
        }
        run_ratios.push(out.here.commits / out.here.ms / (out.there.commits / out.there.ms));
        slice_ratios.push(...out.slice_ratios);
      }
      const rate = (side: AbSide) => (side.commits / side.ms) * 1000;
      const cpu = (side: AbSide) => (side.cpu_us / side.commits).toFixed(1);
      rows.push([
        `  durable commits/s, ${writers} writer${writers > 1 ? 's' : ''}`,
        rate(here).toFixed(0),
        `${rate(there).toFixed(0)}; ratio ${(rate(here) / rate(there)).toFixed(3)} (${run_ratios.map((r) => r.toFixed(2)).join(' ')}; ${median(slice_ratios).toFixed(3)}); ${cpu(here)} / ${cpu(there)} µs`,
      ]);
    }
    return rows;
  });
}
