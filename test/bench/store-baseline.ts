// BENCH_BASELINE=<git ref> for `npm run bench:store`: the write rows (durable commits/s, commit
// latency with history, checkpoint pause) of this tree and of the tree at <ref>, each in a
// fresh process of its own bench:store, interleaved round by round (this, ref; ref, this; ...)
// so that load on the machine lands on both columns alike; the medians side by side with
// their ratio. The ref's tree is a `git worktree` in a temp dir sharing this clone's
// node_modules, removed at the end.
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
      env: { ...process.env, BENCH_ONLY: 'write', BENCH_BASELINE: '' },
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

/** The comparison rows: [label, this tree's median, `baseline <median>; ratio <this/baseline>`]. */
export function baselineRows(ref: string, rounds: number): string[][] {
  const here = resolve(import.meta.dirname, '../..');
  const commit = execFileSync('git', ['-C', here, 'rev-parse', '--short', ref], {
    encoding: 'utf8',
  }).trim();
  const tree = join(mkdtempSync(join(tmpdir(), 'aihub-bench-baseline-')), 'tree');
  execFileSync('git', ['-C', here, 'worktree', 'add', '--detach', tree, commit], {
    stdio: 'ignore',
  });
  symlinkSync(join(here, 'node_modules'), join(tree, 'node_modules'));
  const mine: Array<Map<string, number>> = [];
  const theirs: Array<Map<string, number>> = [];
  try {
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? [here, tree] : [tree, here];
      for (const dir of order) (dir === here ? mine : theirs).push(writeRowsOf(dir));
    }
  } finally {
    execFileSync('git', ['-C', here, 'worktree', 'remove', '--force', tree], { stdio: 'ignore' });
    rmSync(resolve(tree, '..'), { recursive: true, force: true });
  }
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
