// The wallet, API-log and usage reads are written once (store/history-reads.ts, HistoryReads)
// over a small per-backend primitive: a selection's items in key order a stretch at a time, and
// the row of an item. Here that primitive is a few arrays in memory, and every read (at once,
// in turns, as a stream) must answer what a plain computation over the same arrays answers:
// the totals folded, the page picked, a turn per stretch, a stream that stops at its page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  HistoryReads,
  type HistorySource,
  type LogSource,
  type Order,
  type UsageSource,
  type WalletSource,
} from '../../../gateway/store/history-reads.ts';
import type { HistoryRecord, Posting } from '../../../gateway/store/state.ts';
import type { Pacer } from '../../../gateway/store/turns.ts';
import type {
  LogSelect,
  Page,
  UsageSelect,
  WalletLine,
  WalletSelect,
} from '../../../gateway/store/types.ts';

interface Item {
  n: number;
  delta: number;
  balance: number;
  status: number;
  latency: number;
  cost: number;
  tokens: number;
}

/** 1,000 items in key order: deposits and spends of one account, with log and usage figures. */
const ITEMS: Item[] = [];
let balance = 7_000;
for (let n = 0; n < 1_000; n++) {
  const delta = n % 3 === 0 ? 500 + n : -(100 + (n % 7));
  balance += delta;
  ITEMS.push({
    n,
    delta,
    balance,
    status: [200, 201, 404, 0, 503, 200][n % 6]!,
    latency: n % 11,
    cost: n % 5 === 0 ? 0 : 40 + n,
    tokens: 10 + (n % 13),
  });
}
const BEFORE = 7_000;
const STRETCH = 64;

/** What a read asked of the primitive. */
const asked = { stretches: 0, items: 0, rows: 0 };

/** The primitive: the items passing `keep`, in `order`, STRETCH of them (kept or not) at a time. */
function source<R>(
  keep: (item: Item) => boolean,
  rowOf: (item: Item) => R,
): HistorySource<Item, R> {
  return {
    *chunks(order: Order) {
      const all = order === 'asc' ? ITEMS : [...ITEMS].reverse();
      for (let at = 0; at < all.length; at += STRETCH) {
        asked.stretches++;
        yield (function* () {
          for (const item of all.slice(at, at + STRETCH)) {
            asked.items++;
            if (keep(item)) yield item;
          }
        })();
      }
    },
    row(item) {
      asked.rows++;
      return rowOf(item);
    },
  };
}

/** The posting, wallet line and history record an item stands for. */
const postingOf = (item: Item): Posting => ({
  id: `p${item.n}`,
  ts: new Date(item.n).toISOString(),
  memo: '',
  account_id: 'a',
  entries: [['a', item.delta]],
});
const lineOf = (item: Item): WalletLine => ({
  posting: postingOf(item),
  account_id: 'a',
  delta_micros: item.delta,
  opening_micros: item.balance - item.delta,
  closing_micros: item.balance,
});
const recordOf = (item: Item): HistoryRecord => ({ type: 'x', ts: '', n: item.n });

class MemoryReads extends HistoryReads {
  /** Totals by the "backend" (as PostgreSQL's SQL aggregates): used when set and the selection has no `match`. */
  aggregate = false;
  protected walletSource(select: WalletSelect): WalletSource<Item> {
    const base = source((item) => !select.match || select.match(postingOf(item)), lineOf);
    return {
      ...base,
      delta: (item) => item.delta,
      balance: (item) => item.balance,
      edges: () => ({ opening_micros: BEFORE, closing_micros: ITEMS.at(-1)!.balance }),
      aggregate:
        this.aggregate && !select.match
          ? {
              totals: () => Promise.resolve({ total: -1, credits_micros: -2, debits_micros: -3 }),
              page: (page) => Promise.resolve([lineOf(ITEMS[page.offset]!)]),
            }
          : undefined,
    };
  }
  protected logSource(select: LogSelect): Promise<LogSource<Item>> {
    const base = source((item) => !select.match || select.match(recordOf(item)), recordOf);
    return Promise.resolve({
      ...base,
      status: (item: Item) => item.status,
      latency_ms: (item: Item) => item.latency,
    });
  }
  protected usageSource(select: UsageSelect): UsageSource<Item> | null {
    if (select.account_id === 'nobody') return null;
    const base = source((item) => !select.match || select.match(recordOf(item)), recordOf);
    return {
      ...base,
      cost_micros: (item: Item) => item.cost,
      tokens: (item: Item) => item.tokens,
    };
  }
}

/** A pacer that counts its turns (granted at once). */
function counting(): Pacer & { turns: number; ended: boolean } {
  return {
    turns: 0,
    ended: false,
    next() {
      this.turns++;
      return Promise.resolve();
    },
    end() {
      this.ended = true;
    },
  };
}

/** The page of `items` (oldest first) in `order`: what every read's page must be. */
function pageOf<T>(items: T[], page: Page | null, order: Order): T[] {
  const ordered = order === 'asc' ? items : [...items].reverse();
  return page === null ? ordered : ordered.slice(page.offset, page.offset + page.limit);
}

const single: WalletSelect = { account_id: 'a' };
const everyone: WalletSelect = { account_id: null };
const spends = (posting: Posting) => posting.entries[0]![1] < 0;

test('the wallet read folds credits, debits and the balances around the range over every item, and picks its page in either order', async () => {
  const reads = new MemoryReads();
  const credits = ITEMS.filter((i) => i.delta >= 0).reduce((s, i) => s + i.delta, 0);
  const debits = ITEMS.filter((i) => i.delta < 0).reduce((s, i) => s - i.delta, 0);
  for (const order of ['asc', 'desc'] as const)
    for (const page of [
      { offset: 0, limit: 10 },
      { offset: 995, limit: 10 },
      { offset: 37, limit: 0 },
      null,
    ]) {
      const got = await reads.wallet(single, page, order);
      assert.deepEqual(
        { ...got, rows: got.rows.length },
        {
          total: 1_000,
          credits_micros: credits,
          debits_micros: debits,
          opening_micros: BEFORE,
          closing_micros: ITEMS.at(-1)!.balance,
          rows: pageOf(ITEMS, page, order).length,
        },
      );
      assert.deepEqual(got.rows, pageOf(ITEMS, page, order).map(lineOf));
    }
  // Every account's: no balances around the range.
  const all = await reads.wallet(everyone, { offset: 0, limit: 1 }, 'asc');
  assert.equal(all.opening_micros, null);
  assert.equal(all.closing_micros, null);
  // Filtered: the totals of the matching lines only, opening where the first of them does.
  const spent = ITEMS.filter((i) => i.delta < 0);
  const filtered = await reads.wallet(
    { account_id: 'a', match: spends },
    { offset: 2, limit: 3 },
    'desc',
  );
  assert.equal(filtered.total, spent.length);
  assert.equal(filtered.credits_micros, 0);
  assert.equal(filtered.debits_micros, debits);
  assert.equal(filtered.opening_micros, spent[0]!.balance - spent[0]!.delta);
  assert.deepEqual(filtered.rows, pageOf(spent, { offset: 2, limit: 3 }, 'desc').map(lineOf));
  // Memory held the page, never the range.
  reads.kept_most = 0;
  await reads.wallet(single, { offset: 500, limit: 10 }, 'asc');
  assert.equal(reads.kept_most, 10);
});

test('in turns: the same answer, a turn before each stretch; the reader’s own pacer is ended, a given one is not', async () => {
  const reads = new MemoryReads();
  const page = { offset: 3, limit: 4 };
  const given = counting();
  asked.stretches = 0;
  const turned = await reads.walletInTurns(single, page, 'desc', given);
  assert.deepEqual(turned, await reads.wallet(single, page, 'desc'));
  const stretches = Math.ceil(ITEMS.length / STRETCH);
  assert.equal(given.turns, stretches + 1); // one before the read, one before each later stretch and the end
  assert.equal(given.ended, false);
  const logs = counting();
  const log_page = await reads.apiLogsInTurns({ account_id: null }, page, 'asc', logs);
  assert.deepEqual(log_page, await reads.apiLogs({ account_id: null }, page, 'asc'));
  assert.equal(logs.turns, stretches + 1);
  const usage = counting();
  await reads.usageInTurns({ account_id: 'a' }, page, 'asc', usage);
  assert.equal(usage.turns, stretches + 1);
});

test('API-log and usage reads fold their own figures (errors, latency; cost, tokens)', async () => {
  const reads = new MemoryReads();
  const logs = await reads.apiLogs({ account_id: null }, { offset: 0, limit: 2 }, 'desc');
  assert.equal(logs.total, 1_000);
  assert.equal(logs.errors, ITEMS.filter((i) => i.status === 0 || i.status >= 400).length);
  assert.equal(
    logs.latency_total_ms,
    ITEMS.reduce((s, i) => s + i.latency, 0),
  );
  assert.deepEqual(logs.rows, pageOf(ITEMS, { offset: 0, limit: 2 }, 'desc').map(recordOf));
  const odd = (record: HistoryRecord) => (record as unknown as { n: number }).n % 2 === 1;
  const usage = await reads.usageInTurns({ account_id: 'a', match: odd }, null, 'asc');
  const kept = ITEMS.filter((i) => i.n % 2 === 1);
  assert.deepEqual(usage, {
    total: kept.length,
    cost_micros: kept.reduce((s, i) => s + i.cost, 0),
    tokens: kept.reduce((s, i) => s + i.tokens, 0),
    rows: kept.map(recordOf),
  });
  // A selection with nothing to read reads nothing.
  assert.deepEqual(await reads.usageInTurns({ account_id: 'nobody' }, null, 'asc'), {
    total: 0,
    cost_micros: 0,
    tokens: 0,
    rows: [],
  });
});

test('streams: a batch per stretch, in order, from the offset to the limit; no stretch read and no row made past the page', async () => {
  const reads = new MemoryReads();
  const page = { offset: 70, limit: 100 };
  asked.stretches = asked.items = asked.rows = 0;
  const pacer = counting();
  const batches: WalletLine[][] = [];
  for await (const batch of reads.walletLines(single, page, 'desc', pacer)) batches.push(batch);
  assert.deepEqual(batches.flat(), pageOf(ITEMS, page, 'desc').map(lineOf));
  // Items 70..169 newest first lie in stretches 2 and 3 (of 64): the 4th is never read.
  assert.equal(asked.stretches, 3);
  assert.equal(asked.items, 170);
  assert.equal(asked.rows, 100);
  assert.equal(pacer.turns, 3);
  assert.deepEqual(
    batches.map((b) => b.length),
    [58, 42],
  );
  // The export: every matching line, without turns.
  const exported: WalletLine[] = [];
  for await (const batch of reads.walletExport({ account_id: 'a', match: spends }, 'asc'))
    exported.push(...batch);
  assert.deepEqual(exported, ITEMS.filter((i) => i.delta < 0).map(lineOf));
  const records: HistoryRecord[] = [];
  for await (const batch of reads.apiLogRecords(
    { account_id: null },
    { offset: 0, limit: 5 },
    'asc',
    counting(),
  ))
    records.push(...batch);
  assert.deepEqual(records, ITEMS.slice(0, 5).map(recordOf));
  const none: HistoryRecord[] = [];
  for await (const batch of reads.usageRecords(
    { account_id: 'a' },
    { offset: 0, limit: 0 },
    'asc',
    counting(),
  ))
    none.push(...batch);
  assert.deepEqual(none, []);
});

test('a backend’s own aggregate answers a page’s totals and rows when it has one; a read of every row still folds them', async () => {
  const reads = new MemoryReads();
  reads.aggregate = true;
  asked.stretches = 0;
  const by_sql = await reads.wallet(single, { offset: 5, limit: 2 }, 'asc');
  assert.deepEqual(by_sql, {
    total: -1,
    credits_micros: -2,
    debits_micros: -3,
    opening_micros: BEFORE,
    closing_micros: ITEMS.at(-1)!.balance,
    rows: [lineOf(ITEMS[5]!)],
  });
  assert.equal(asked.stretches, 0);
  const every = await reads.wallet(single, null, 'asc');
  assert.equal(every.total, 1_000);
  assert.ok(asked.stretches > 0);
});
