// bench:store's keyed rows (issue #26): the same fill of payment transactions with and
// without an idempotency key each, then restarts. A keyed transaction is the lean fill's
// transaction plus, in its commit, its key's record with the answer a recharge gives (about
// 300 bytes), as the payment engine leaves it once answered. Measured in fresh processes,
// interleaved, ROUNDS rounds: restart time and heap after the restart of the unkeyed and the
// keyed store at the largest size (target: keyed within 1.2× of unkeyed), and a keyed
// retry's lookup (`store.get('idempotency', key)`, as the engine's `tx.get` reads it) at the
// smallest and the largest size, both stores open in one process and measured in alternating
// slices (target: ratio <= 1.5). With BENCH_BASELINE=<ref> the same
// runs on the tree of <ref> (a git worktree), its stores filled by its own store code.
//
// Also the child of those measurements, given a tree's root:
//   node --import tsx store-keyed.ts fill <root> <dir> <from> <to> <keyed 0|1>
//   node --expose-gc --import tsx store-keyed.ts measure <root> <dir>
//   node --import tsx store-keyed.ts lookups <root> <small dir> <its txns> <large dir> <its txns>
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { FileStore as Store } from '../../gateway/store/store.ts';
import type * as Ledger from '../../gateway/ledger/ledger.ts';
import { FILL_T0_MS, fillAccount, fillTxn } from '../support/history-fill.ts';
import { withTreeAt } from './store-baseline.ts';
import { PAYMENT_HISTORY_TAGS } from '../../gateway/payments/history-tags.ts';

const ACCOUNTS = 100;
const STEP_MS = 60_000;
const PER_COMMIT = 2_000;
const HERE = resolve(import.meta.dirname, '../..');
const SELF = resolve(import.meta.dirname, 'store-keyed.ts');

export const keyOf = (i: number) => `pay:${fillAccount(i % ACCOUNTS)}:order-${i}`;

/** The answer the engine records for a recharge (renderRecharge's shape): what a retry is given. */
function answerOf(i: number, txn_id: string) {
  return {
    status: true,
    message: 'success',
    txn_id,
    data: {
      txn_id,
      status: 'success',
      operator: 'JIO',
      number: `98765${String(i % 100_000).padStart(5, '0')}`,
      amount: 199,
      commission: 3.98,
      operator_ref: `OP${i}`,
      balance: 1_000_000 - (i % 1000) * 199,
      created_at: new Date(FILL_T0_MS + i * STEP_MS).toISOString(),
    },
  };
}

async function openStore(root: string, dir: string, now?: () => Date): Promise<Store> {
  const { Store } = (await import(join(root, 'gateway/store/store.ts'))) as {
    Store: typeof import('../../gateway/store/store.ts').Store;
  };
  return Store.open(dir, {
    history_tags: PAYMENT_HISTORY_TAGS,
    checkpoint_interval_ms: 3_600_000,
    ...(now ? { now } : {}),
  });
}

/** Transactions [from, to): lean (a debit to the provider, the commission), each its own commit; keyed: with its key's answered record. */
async function fill(root: string, dir: string, from: number, to: number, keyed: boolean) {
  const clock = { ms: FILL_T0_MS + from * STEP_MS };
  const store = await openStore(root, dir, () => new Date(clock.ms));
  const ledger = (await import(join(root, 'gateway/ledger/ledger.ts'))) as typeof Ledger;
  if (from === 0)
    await store.transact((tx) => {
      for (let a = 0; a < ACCOUNTS; a++)
        ledger.creditWallet(tx, {
          account_id: fillAccount(a),
          amount_micros: 1e15,
          from: ledger.FUNDING_TOPUP,
          memo: 'opening funds',
        });
    });
  for (let done = from; done < to; done += PER_COMMIT) {
    clock.ms = FILL_T0_MS + done * STEP_MS;
    const commits: Array<Promise<void>> = [];
    for (let i = done; i < Math.min(to, done + PER_COMMIT); i++)
      commits.push(
        store.transact((tx) => {
          const account_id = fillAccount(i % ACCOUNTS);
          const at = new Date(FILL_T0_MS + i * STEP_MS).toISOString();
          const txn = fillTxn(i, account_id, at, false);
          ledger.debitWallet(tx, {
            account_id,
            amount_micros: txn.amount_micros,
            to: txn.pay_to,
            memo: `recharge ${txn.id}`,
            ref: txn.id,
          });
          ledger.creditWallet(tx, {
            account_id,
            amount_micros: txn.commission_micros,
            from: 'commission:recharge',
            memo: `recharge commission ${txn.id}`,
            ref: txn.id,
          });
          if (keyed) {
            txn.idempotency_key = `order-${i}`;
            tx.set('idempotency', keyOf(i), {
              key: keyOf(i),
              request_hash: `${(i * 2654435761) >>> 0}`.padStart(64, '0'),
              status: 200,
              body: answerOf(i, txn.id),
              created_at: at,
            });
          }
          tx.set('payment_txns', txn.id, txn);
        }),
      );
    await Promise.all(commits);
  }
  await store.close();
}

interface KeyedMeasured {
  open_ms: number;
  heap_mb: number;
  buffers_mb: number;
}

/** A restart of one store: its time and the heap after it. */
async function measure(root: string, dir: string) {
  // The store's code is loaded (tsx compiles it) before the clock starts: a restart is the
  // store's open. Timed with the import, the row measured the TypeScript loader, about 0.1 to
  // 1 s on this machine whatever the store (keyed / without keys 0.85, 0.94 and 1.99 in three
  // runs, and 0.5 to 1.1 s for one store's open in a row under load).
  await import(join(root, 'gateway/store/store.ts'));
  const started = performance.now();
  const store = await openStore(root, dir);
  const open_ms = performance.now() - started;
  (globalThis as { gc?: () => void }).gc?.();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  await store.close();
  const result: KeyedMeasured = {
    open_ms,
    heap_mb: heapUsed / 1e6,
    buffers_mb: arrayBuffers / 1e6,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

/** Per lookup, µs, of the small store and the large one: retries (first time, again) and new keys. */
interface Lookups {
  cold: [number, number];
  warm: [number, number];
  miss: [number, number];
  /** Retries of other keys with both stores' files evicted from the page cache just before the pass (absent in runs before it). */
  evicted?: [number, number];
  /** Retries of other keys with the store's id runs and journal evicted before each slice of 20 (absent in runs before it). */
  evicted_each?: [number, number];
  /** MB of each store's files in the page cache at the start of the cold pass, and once evicted. */
  resident_mb?: { found: [number, number]; evicted: [number, number] };
  blocks_per_lookup: number;
}

/** Every file under `dir`. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

/** MB of these files in the page cache (util-linux `fincore`). */
function residentMb(files: string[]): number {
  const out = execFileSync('fincore', ['--bytes', '--noheadings', '--raw', '-o', 'RES', ...files], {
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  });
  return out.split('\n').reduce((sum, line) => sum + (Number(line.trim()) || 0), 0) / 1e6;
}

/**
 * Drops these files' pages from the page cache: GNU dd's `iflag=nocache count=0` calls
 * posix_fadvise(POSIX_FADV_DONTNEED) on the whole file and reads nothing. The stores' files
 * are fsynced (no dirty page stays behind); `residentMb` shows what is left.
 */
function evict(files: string[]): void {
  for (const file of files)
    execFileSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
}

const SLICES = 100;
const PER_SLICE = 20;

/**
 * A keyed retry's lookup (`store.get('idempotency', key)`, what the engine's `tx.get` does) in
 * the small and the large store, both open in this one process, measured in alternating slices
 * of PER_SLICE lookups (which store goes first alternating too), so that whatever else loads
 * the machine meanwhile lands on both alike: on this shared machine, the same lookup in two
 * processes a minute apart differed by up to 7 times. Five passes: keys retried for the first
 * time since the restart (cold as found: whatever of each store the page cache holds), the
 * same keys again (their blocks in the page cache), other keys with both stores' files
 * evicted from the page cache just before the pass, others with the files a lookup reads
 * evicted before each slice (every retry from the disk: the ratio counts reads per lookup,
 * not how much of each store the cache happens to hold), and keys never used (what every new
 * request looks up).
 */
async function lookups(root: string, dirs: [string, string], sizes: [number, number]) {
  const stores = [await openStore(root, dirs[0]), await openStore(root, dirs[1])];
  const blocks = (k: number) =>
    (stores[k]!.archive as { id_blocks_read?: number }).id_blocks_read ?? 0;
  const slice = (k: number, seed: number, key: (n: number) => string, found: boolean) => {
    let s = seed;
    const random = () => (s = (s * 48271) % 2147483647) / 2147483647;
    const started = performance.now();
    for (let n = 0; n < PER_SLICE; n++) {
      const record = stores[k]!.get('idempotency', key(Math.floor(random() * sizes[k]!)));
      if (found !== (record !== undefined)) throw new Error('a lookup gave the wrong answer');
    }
    return performance.now() - started;
  };
  const pass = (
    seed: number,
    key: (n: number) => string,
    found: boolean,
    before_slice?: (k: 0 | 1) => void,
  ): [number, number] => {
    const total: [number, number] = [0, 0];
    for (let i = 0; i < SLICES; i++)
      for (const k of i % 2 ? ([1, 0] as const) : ([0, 1] as const)) {
        before_slice?.(k);
        total[k] += slice(k, seed + i, key, found);
      }
    return [(total[0] / SLICES / PER_SLICE) * 1000, (total[1] / SLICES / PER_SLICE) * 1000];
  };
  const newKey = (i: number) => `pay:${fillAccount(i % ACCOUNTS)}:new-${i}`;
  pass(100_000, keyOf, true); // warm-up (other keys)
  const files = dirs.map(filesUnder);
  const found = files.map(residentMb) as [number, number];
  const blocks_before = blocks(1);
  const cold = pass(1, keyOf, true);
  const warm = pass(1, keyOf, true);
  const blocks_per_lookup = (blocks(1) - blocks_before) / (2 * SLICES * PER_SLICE);
  for (const of_store of files) evict(of_store);
  const resident_evicted = files.map(residentMb) as [number, number];
  const evicted = pass(200_000, keyOf, true);
  // Evicted before the pass, the small store's blocks come back into the page cache during
  // it (2,000 retries over its few MB of runs, and the kernel's readahead around each miss),
  // the large store's do not: evicted before each slice of 20, every retry of both reads
  // what it reads from the disk, and the ratio is reads per retry at 1M against at 10k.
  const read_by_lookups = files.map((of_store) =>
    of_store.filter((file) => /[/\\](idrun[/\\].*\.run|journal[/\\].*)$/.test(file)),
  );
  const evicted_each = pass(300_000, keyOf, true, (k) => evict(read_by_lookups[k]!));
  const miss = pass(7, newKey, false);
  for (const store of stores) await store.close();
  const result: Lookups = {
    cold,
    warm,
    miss,
    evicted,
    evicted_each,
    resident_mb: { found, evicted: resident_evicted },
    blocks_per_lookup,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

const child = (args: string[], gc = false) =>
  execFileSync(
    process.execPath,
    [...(gc ? ['--expose-gc'] : []), '--import', 'tsx', SELF, ...args],
    { encoding: 'utf8', maxBuffer: 1 << 20, stdio: ['ignore', 'pipe', 'inherit'] },
  );

interface TreeStores {
  name: string;
  root: string;
  small: string;
  keyed: string;
  plain: string;
  fill_s: { keyed: number; plain: number };
  rounds: Array<Record<'small' | 'keyed' | 'plain', KeyedMeasured> & { lookups: Lookups }>;
}

function fillTree(name: string, root: string, base: string, small: number, large: number) {
  const dir = mkdtempSync(join(base, 'tree-'));
  const stores: TreeStores = {
    name,
    root,
    small: join(dir, 'small'),
    keyed: join(dir, 'keyed'),
    plain: join(dir, 'plain'),
    fill_s: { keyed: 0, plain: 0 },
    rounds: [],
  };
  let started = performance.now();
  child(['fill', root, stores.keyed, '0', String(small), '1']);
  cpSync(stores.keyed, stores.small, { recursive: true });
  child(['fill', root, stores.keyed, String(small), String(large), '1']);
  stores.fill_s.keyed = (performance.now() - started) / 1000;
  started = performance.now();
  child(['fill', root, stores.plain, '0', String(large), '0']);
  stores.fill_s.plain = (performance.now() - started) / 1000;
  return stores;
}

/** The keyed rows: this tree (and, with `baseline`, the tree of that ref) filled and measured interleaved. */
export function keyedRows(options: {
  small: number;
  large: number;
  rounds: number;
  baseline: string;
}): string[][] {
  const base = mkdtempSync(join(tmpdir(), 'aihub-bench-keyed-'));
  const label = (n: number) => (n >= 1e6 ? `${n / 1e6}M` : `${n / 1e3}k`);
  const run = (trees: Array<[string, string]>): string[][] => {
    const stores = trees.map(([name, root]) =>
      fillTree(name, root, base, options.small, options.large),
    );
    const kinds = ['small', 'keyed', 'plain'] as const;
    for (let round = 0; round < options.rounds; round++) {
      // Every store once per round, the order alternating, so that load lands on all alike.
      const order = stores.flatMap((tree) => kinds.map((kind) => [tree, kind] as const));
      if (round % 2 === 1) order.reverse();
      const measured = new Map<
        TreeStores,
        Partial<Record<(typeof kinds)[number], KeyedMeasured>>
      >();
      for (const [tree, kind] of order) {
        const text = child(['measure', tree.root, tree[kind]], true);
        const of = measured.get(tree) ?? {};
        of[kind] = JSON.parse(text.trim().split('\n').at(-1)!) as KeyedMeasured;
        measured.set(tree, of);
      }
      for (const tree of round % 2 ? [...stores].reverse() : stores) {
        const text = child([
          'lookups',
          tree.root,
          tree.small,
          String(options.small),
          tree.keyed,
          String(options.large),
        ]);
        tree.rounds.push({
          ...(measured.get(tree) as Record<(typeof kinds)[number], KeyedMeasured>),
          lookups: JSON.parse(text.trim().split('\n').at(-1)!) as Lookups,
        });
      }
    }
    const rows: string[][] = [
      [
        `keyed rows: medians of ${options.rounds} rounds, stores interleaved`,
        '',
        'each store in a fresh process every round',
      ],
    ];
    for (const tree of stores) {
      const of = (kind: (typeof kinds)[number], key: keyof KeyedMeasured) =>
        median(tree.rounds.map((r) => r[kind][key]));
      const ratio = (
        key: keyof KeyedMeasured,
        a: (typeof kinds)[number],
        b: (typeof kinds)[number],
      ) => median(tree.rounds.map((r) => r[a][key] / r[b][key])).toFixed(2);
      const L = label(options.large);
      rows.push([
        `${tree.name}: ${L} txns without keys: restart`,
        `${(of('plain', 'open_ms') / 1000).toFixed(2)} s`,
        `heap after restart ${of('plain', 'heap_mb').toFixed(1)} MB + ${of('plain', 'buffers_mb').toFixed(1)} MB array buffers; filled in ${tree.fill_s.plain.toFixed(0)} s`,
      ]);
      rows.push([
        `${tree.name}: ${L} txns, each with its key: restart`,
        `${(of('keyed', 'open_ms') / 1000).toFixed(2)} s`,
        `heap after restart ${of('keyed', 'heap_mb').toFixed(1)} MB + ${of('keyed', 'buffers_mb').toFixed(1)} MB array buffers; filled in ${tree.fill_s.keyed.toFixed(0)} s (10k copied aside on the way)`,
      ]);
      rows.push([
        `${tree.name}: keyed / without keys at ${L} (target <= 1.2): restart, heap`,
        ratio('open_ms', 'keyed', 'plain'),
        `${ratio('heap_mb', 'keyed', 'plain')}; heap + array buffers ${median(
          tree.rounds.map(
            (r) => (r.keyed.heap_mb + r.keyed.buffers_mb) / (r.plain.heap_mb + r.plain.buffers_mb),
          ),
        ).toFixed(2)}`,
      ]);
      type Pass = 'cold' | 'warm' | 'miss' | 'evicted' | 'evicted_each';
      const look = (pass: Pass, k: 0 | 1) => median(tree.rounds.map((r) => r.lookups[pass]![k]));
      const lookRatio = (pass: Pass) =>
        median(tree.rounds.map((r) => r.lookups[pass]![1] / r.lookups[pass]![0])).toFixed(2);
      const resident = (when: 'found' | 'evicted', k: 0 | 1) =>
        median(tree.rounds.map((r) => r.lookups.resident_mb![when][k])).toFixed(1);
      rows.push([
        `${tree.name}: a keyed retry's lookup at ${label(options.small)} / ${L}`,
        `${look('cold', 0).toFixed(0)} µs / ${look('cold', 1).toFixed(0)} µs`,
        `the same keys again (page cache warm) ${look('warm', 0).toFixed(0)} / ${look('warm', 1).toFixed(0)} µs; a new key ${look('miss', 0).toFixed(1)} / ${look('miss', 1).toFixed(1)} µs; ${median(tree.rounds.map((r) => r.lookups.blocks_per_lookup)).toFixed(2)} id-run blocks per lookup at ${L}`,
      ]);
      rows.push([
        `${tree.name}: lookup ratio ${L} / ${label(options.small)} (target <= 1.5)`,
        lookRatio('cold'),
        `page cache warm ${lookRatio('warm')}; a new key ${lookRatio('miss')} (both stores in one process, alternating slices)`,
      ]);
      rows.push([
        `${tree.name}: a retry's lookup with both stores evicted from the page cache, ${label(options.small)} / ${L}`,
        `${look('evicted', 0).toFixed(0)} µs / ${look('evicted', 1).toFixed(0)} µs`,
        `ratio ${lookRatio('evicted')}; page cache held ${resident('found', 0)} / ${resident('found', 1)} MB of the stores' files at the cold pass as found, ${resident('evicted', 0)} / ${resident('evicted', 1)} MB once evicted`,
      ]);
      rows.push([
        `${tree.name}: the same, id runs and journal evicted before each slice of ${PER_SLICE}, ${label(options.small)} / ${L}`,
        `${look('evicted_each', 0).toFixed(0)} µs / ${look('evicted_each', 1).toFixed(0)} µs`,
        `ratio ${lookRatio('evicted_each')} (every retry from the disk at both sizes: reads per retry)`,
      ]);
      // Each round's own figures: a lookup's reads hit the disk or the page cache, and which
      // one varies from round to round on a shared machine; the medians above hide that.
      rows.push([
        `${tree.name}: each round, restart and heap ratio; lookup ratio (cold, warm, evicted)`,
        '',
        tree.rounds
          .map(
            (r) =>
              `${(r.keyed.open_ms / r.plain.open_ms).toFixed(2)} ${(r.keyed.heap_mb / r.plain.heap_mb).toFixed(2)}; ${(r.lookups.cold[1] / r.lookups.cold[0]).toFixed(2)} (${r.lookups.cold[0].toFixed(0)}/${r.lookups.cold[1].toFixed(0)} µs) ${(r.lookups.warm[1] / r.lookups.warm[0]).toFixed(2)} evicted ${(r.lookups.evicted![1] / r.lookups.evicted![0]).toFixed(2)}, each slice ${(r.lookups.evicted_each![1] / r.lookups.evicted_each![0]).toFixed(2)}`,
          )
          .join(' | '),
      ]);
    }
    return rows;
  };
  try {
    if (!options.baseline) return run([['this tree', HERE]]);
    return withTreeAt(options.baseline, (tree, commit) =>
      run([
        ['this tree', HERE],
        [commit, tree],
      ]),
    );
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

if (process.argv[1] === SELF) {
  const [mode, root, dir, a, b, c] = process.argv.slice(2);
  if (mode === 'fill') await fill(root!, dir!, Number(a), Number(b), c === '1');
  else if (mode === 'measure') await measure(root!, dir!);
  else if (mode === 'lookups') await lookups(root!, [dir!, b!], [Number(a), Number(c)]);
  else throw new Error(`store-keyed.ts: unknown mode ${mode}`);
}
