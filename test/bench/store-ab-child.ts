// One run of `BENCH_ONLY=ab` (store-baseline.ts): this tree's store and an older tree's,
// each opened fresh and funded, in this one process, take turns at the same load (`writers`
// durable commits at a time) in short slices, the order alternating slice by slice, so that
// whatever else the machine runs lands on both alike; separate processes a few seconds
// apart vary by a third on a shared machine. Prints one JSON line: commits, milliseconds and
// process CPU of each side, and the ratio of each slice pair.
//   node --import tsx store-ab-child.ts <this tree> <older tree> <writers> <slice ms> <slices>
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { commitThroughput, fund, type LoadLedger, type LoadStore } from './store-load.ts';
import { PAYMENT_HISTORY_TAGS } from '../../gateway/payments/history-tags.ts';

const [here, there, writers_text, slice_text, slices_text] = process.argv.slice(2);
const writers = Number(writers_text);
const slice_ms = Number(slice_text);
const slices = Number(slices_text);

interface Side {
  /** `checkpointing`: the store's checkpoint in progress (private in both trees; read here only). */
  store: LoadStore & { close(): Promise<void>; readonly checkpointing?: Promise<void> | null };
  ledger: LoadLedger;
  dir: string;
  commits: number;
  ms: number;
  cpu_us: number;
  rates: number[];
}

/** A tree's own Store and ledger, a fresh store of it funded as bench:store funds one. */
async function open(tree: string): Promise<Side> {
  const module = (path: string) => import(pathToFileURL(join(tree, path)).href);
  const { Store } = (await module('gateway/store/store.ts')) as {
    Store: { open(dir: string, options: object): Promise<Side['store']> };
  };
  const ledger = (await module('gateway/ledger/ledger.ts')) as LoadLedger;
  const dir = mkdtempSync(join(tmpdir(), 'aihub-bench-ab-'));
  const store = await Store.open(dir, {
    history_tags: PAYMENT_HISTORY_TAGS,
    checkpoint_every_records: 50_000,
  });
  await fund(store, ledger);
  return { store, ledger, dir, commits: 0, ms: 0, cpu_us: 0, rates: [] };
}

const sides = [await open(here!), await open(there!)] as const;
for (const side of sides) await commitThroughput(side.store, writers, 0.3, side.ledger); // warm-up
for (let slice = 0; slice < slices; slice++) {
  for (const side of slice % 2 === 0 ? sides : [sides[1], sides[0]]) {
    const cpu = process.cpuUsage();
    const started = performance.now();
    const { commits } = await commitThroughput(side.store, writers, slice_ms / 1000, side.ledger);
    // A checkpoint begun in this slice (both trees take one every 50,000 records) finishes in
    // it, so that its disk and CPU work count against the tree that took it, not the next slice.
    await side.store.checkpointing;
    const ms = performance.now() - started;
    const used = process.cpuUsage(cpu);
    side.commits += commits;
    side.ms += ms;
    side.cpu_us += used.user + used.system;
    side.rates.push((commits / ms) * 1000);
  }
}
for (const side of sides) {
  await side.store.close();
  rmSync(side.dir, { recursive: true, force: true });
}
const [a, b] = sides;
console.log(
  JSON.stringify({
    here: { commits: a.commits, ms: a.ms, cpu_us: a.cpu_us },
    there: { commits: b.commits, ms: b.ms, cpu_us: b.cpu_us },
    slice_ratios: a.rates.map((rate, i) => rate / b.rates[i]!),
  }),
);
