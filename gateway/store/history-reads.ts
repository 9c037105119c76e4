// What the history reads of both backends share (store/reads.ts for the JSON-file store,
// store/pg/reads.ts for PostgreSQL): the wallet, API-log and usage reads themselves
// (`HistoryReads`, over each backend's per-selection source), a page picked from a walk while
// its totals are folded, a page taken from a stream, and the tests of a transaction's fields.
import { ReadSnapshot } from './snapshot.js';
import type { HistoryRecord } from './state.js';
import { Turns, type Pacer } from './turns.js';
import type {
  LogResult,
  LogSelect,
  Page,
  TxnRow,
  TxnSelect,
  UsageResult,
  UsageSelect,
  WalletLine,
  WalletResult,
  WalletSelect,
} from './types.js';

export function statusMatches(status: number, wanted: string): boolean {
  return /^\dxx$/.test(wanted)
    ? Math.floor(status / 100) === Number(wanted[0])
    : status === Number(wanted);
}

/**
 * The page of a walk in list order (oldest first), in `order`, holding no more than the page
 * (or, newest first, the page and the rows after it): a range's totals are counted over
 * every match while memory holds its page only.
 */
export class PagePick<T> {
  total = 0;
  /** The most items held at once. */
  kept_most = 0;
  private kept: T[] = [];
  constructor(
    private readonly page: Page | null,
    private readonly order: 'asc' | 'desc',
  ) {}

  offer(item: T): void {
    const position = this.total++;
    const page = this.page;
    if (page === null) this.kept.push(item);
    else if (page.limit === 0)
      return; // a count alone (a CSV download's total)
    else if (this.order === 'asc') {
      if (position >= page.offset && position < page.offset + page.limit) this.kept.push(item);
    } else {
      // Newest first: the last offset + limit matches so far (trimmed now and then, amortized).
      this.kept.push(item);
      const need = page.offset + page.limit;
      if (this.kept.length >= 2 * need + 1024) this.kept = this.kept.slice(-need);
    }
    if (this.kept.length > this.kept_most) this.kept_most = this.kept.length;
  }

  rows(): T[] {
    if (this.order === 'asc') return this.kept;
    const newest_first = this.kept.slice().reverse();
    return this.page === null
      ? newest_first
      : newest_first.slice(this.page.offset, this.page.offset + this.page.limit);
  }
}

/**
 * A page taken from items as they pass in the page's order: the first `offset` skipped, then
 * at most `limit` kept; a stream stops reading once `full`.
 */
export class PageTake {
  private skipped = 0;
  private taken = 0;
  constructor(private readonly page: Page) {}

  /** Counts an item: true when it is in the page (keep it), false when it is skipped. */
  offer(): boolean {
    if (this.skipped < this.page.offset) {
      this.skipped++;
      return false;
    }
    this.taken++;
    return true;
  }

  get full(): boolean {
    return this.taken >= this.page.limit;
  }
}

/** The test of a transaction's service, status and creation time against a selection (not its `match`). */
export function txnFieldsMatch(row: TxnRow, select: TxnSelect): boolean {
  if (select.service !== undefined && row.service !== select.service) return false;
  if (select.status !== undefined && row.status !== select.status) return false;
  const created_ms = Date.parse(row.created_at);
  if (select.from_ms !== undefined && created_ms < select.from_ms) return false;
  if (select.to_ms !== undefined && created_ms > select.to_ms) return false;
  return true;
}

// ---- the wallet, API-log and usage reads, written once ----------------------------------------
//
// Each backend supplies, per selection, a small primitive (a `HistorySource`): the selection's
// items in key order a stretch at a time (each stretch one turn's work; an item carries the
// figures the totals need), and the row of an item (read for the page's items only).
// `HistoryReads` folds the totals, picks the page, paces the turns and drives the streams for
// the three kinds; a backend that can total a selection itself (PostgreSQL's aggregates, when
// no JavaScript filter must see every item) offers that as the source's `aggregate`.

export type Order = 'asc' | 'desc';
type Maybe<T> = T | Promise<T>;

/** One selection's items and rows, as a backend reads them. */
export interface HistorySource<I, R> {
  /**
   * The selection's items in `order`, a stretch at a time: a stretch is read when it is asked
   * for, and its items may be computed as they are taken (a stream stops taking at its page's
   * end). `use`: for totals (every item) or a stream of rows (a page's worth).
   */
  chunks(order: Order, use: 'fold' | 'stream'): Iterable<Iterable<I>> | AsyncIterable<Iterable<I>>;
  /** The row an item stands for (read now if the item has not read it). */
  row(item: I): R;
}

/** Totals and a page computed by the backend itself. */
export interface HistoryAggregate<T, R> {
  totals(): Promise<T>;
  page(page: Page, order: Order): Promise<R[]>;
}

export interface WalletSource<I> extends HistorySource<I, WalletLine> {
  delta(item: I): number;
  /** The account's balance after the item. */
  balance(item: I): number;
  /** One account's balances before the range's first item and after its last (or around it). */
  edges(): Maybe<{ opening_micros: number; closing_micros: number }>;
  aggregate?:
    | HistoryAggregate<{ total: number; credits_micros: number; debits_micros: number }, WalletLine>
    | undefined;
}

export interface LogSource<I> extends HistorySource<I, HistoryRecord> {
  /** The HTTP status (0: no answer). */
  status(item: I): number;
  latency_ms(item: I): number;
  aggregate?:
    | HistoryAggregate<{ total: number; errors: number; latency_total_ms: number }, HistoryRecord>
    | undefined;
}

export interface UsageSource<I> extends HistorySource<I, HistoryRecord> {
  cost_micros(item: I): number;
  tokens(item: I): number;
  aggregate?:
    | HistoryAggregate<{ total: number; cost_micros: number; tokens: number }, HistoryRecord>
    | undefined;
}

/** What a read with totals does with its source first, with each item, and at the end. */
interface Fold<S, T> {
  /** The answer, its figures added to as items pass. */
  result: T;
  begin?(source: S): Maybe<void>;
  add(item: unknown, source: S): void;
  end?(source: S): void;
}

/** Every row: a stream without a page (the wallet export). */
const EVERY_ROW: Page = { offset: 0, limit: Infinity };

/** The next stretch of a source's chunks, whether it reads them at once or by waiting. */
function stretches<I>(
  chunks: Iterable<Iterable<I>> | AsyncIterable<Iterable<I>>,
): Iterator<Iterable<I>> | AsyncIterator<Iterable<I>> {
  return Symbol.asyncIterator in chunks
    ? chunks[Symbol.asyncIterator]()
    : (chunks as Iterable<Iterable<I>>)[Symbol.iterator]();
}

/**
 * The wallet, API-log and usage reads of `StoreReads`, for every backend: each read at once
 * (`wallet`...), in turns (`walletInTurns`...: a pacer's turn before each stretch) and as a
 * stream of its page's rows (`walletLines`...). A backend says how a selection's items are read.
 */
export abstract class HistoryReads {
  /**
   * Long reads take turns (see turns.ts): turns are chained, each one a later turn of the
   * event loop, so however many reports run, one chunk of one of them runs per turn and
   * requests' I/O is served between any two; while other work keeps the loop busy, the chunks
   * together take at most the budget's share of its time.
   */
  readonly turns = new Turns();

  /**
   * The most items the page pick of one read with totals has held at once since start:
   * totals are folded as the read goes, so this stays within a page's size however long the
   * range (tests look at it).
   */
  kept_most = 0;

  protected abstract walletSource(select: WalletSelect): Maybe<WalletSource<unknown> | null>;
  protected abstract logSource(select: LogSelect): Maybe<LogSource<unknown> | null>;
  protected abstract usageSource(select: UsageSelect): Maybe<UsageSource<unknown> | null>;

  snapshot(): ReadSnapshot {
    return new ReadSnapshot();
  }

  wallet(select: WalletSelect, page: Page | null, order: Order): Promise<WalletResult> {
    return this.walletRead(select, page, order, null);
  }

  walletInTurns(
    select: WalletSelect,
    page: Page | null,
    order: Order,
    pacer?: Pacer,
  ): Promise<WalletResult> {
    return this.inTurns(pacer, (turns) => this.walletRead(select, page, order, turns));
  }

  walletLines(
    select: WalletSelect,
    page: Page,
    order: Order,
    pacer: Pacer,
  ): AsyncGenerator<WalletLine[]> {
    return this.stream(this.walletSource(select), page, order, pacer);
  }

  walletExport(select: WalletSelect, order: Order): AsyncGenerator<WalletLine[]> {
    return this.stream(this.walletSource(select), EVERY_ROW, order, null);
  }

  apiLogs(select: LogSelect, page: Page | null, order: Order): Promise<LogResult> {
    return this.logRead(select, page, order, null);
  }

  apiLogsInTurns(
    select: LogSelect,
    page: Page | null,
    order: Order,
    pacer?: Pacer,
  ): Promise<LogResult> {
    return this.inTurns(pacer, (turns) => this.logRead(select, page, order, turns));
  }

  apiLogRecords(
    select: LogSelect,
    page: Page,
    order: Order,
    pacer: Pacer,
  ): AsyncGenerator<HistoryRecord[]> {
    return this.stream(this.logSource(select), page, order, pacer);
  }

  usageInTurns(
    select: UsageSelect,
    page: Page | null,
    order: Order,
    pacer?: Pacer,
  ): Promise<UsageResult> {
    return this.inTurns(pacer, (turns) => this.usageRead(select, page, order, turns));
  }

  usageRecords(
    select: UsageSelect,
    page: Page,
    order: Order,
    pacer: Pacer,
  ): AsyncGenerator<HistoryRecord[]> {
    return this.stream(this.usageSource(select), page, order, pacer);
  }

  private walletRead(
    select: WalletSelect,
    page: Page | null,
    order: Order,
    pacer: Pacer | null,
  ): Promise<WalletResult> {
    const single = select.account_id !== null;
    const result: WalletResult = {
      total: 0,
      credits_micros: 0,
      debits_micros: 0,
      opening_micros: single ? 0 : null,
      closing_micros: single ? 0 : null,
      rows: [],
    };
    let first: unknown = undefined;
    return this.read(() => this.walletSource(select), page, order, pacer, {
      result,
      begin: async (source) => {
        if (single) Object.assign(result, await source.edges());
      },
      add: (item, source) => {
        if (first === undefined) first = item;
        const delta = source.delta(item);
        if (delta >= 0) result.credits_micros += delta;
        else result.debits_micros -= delta;
      },
      // A filtered range opens where its first matching line does.
      end: (source) => {
        if (select.match && single && first !== undefined)
          result.opening_micros = source.balance(first) - source.delta(first);
      },
    });
  }

  private logRead(
    select: LogSelect,
    page: Page | null,
    order: Order,
    pacer: Pacer | null,
  ): Promise<LogResult> {
    const result: LogResult = { total: 0, errors: 0, latency_total_ms: 0, rows: [] };
    return this.read(() => this.logSource(select), page, order, pacer, {
      result,
      add: (item, source) => {
        const status = source.status(item);
        if (status === 0 || status >= 400) result.errors++;
        result.latency_total_ms += source.latency_ms(item);
      },
    });
  }

  private usageRead(
    select: UsageSelect,
    page: Page | null,
    order: Order,
    pacer: Pacer | null,
  ): Promise<UsageResult> {
    const result: UsageResult = { total: 0, cost_micros: 0, tokens: 0, rows: [] };
    return this.read(() => this.usageSource(select), page, order, pacer, {
      result,
      add: (item, source) => {
        result.cost_micros += source.cost_micros(item);
        result.tokens += source.tokens(item);
      },
    });
  }

  /**
   * A selection's total and page, its figures folded item by item (`fold`), the items read in
   * key order a stretch per turn of `pacer` (its first turn before the source is made); memory
   * holds the page. A source's aggregate, if it has one, answers a page (not every row) instead.
   */
  private async read<
    T extends { total: number; rows: unknown[] },
    S extends HistorySource<unknown, T['rows'][number]> & {
      aggregate?: HistoryAggregate<Partial<Omit<T, 'rows'>>, T['rows'][number]> | undefined;
    },
  >(
    make: () => Maybe<S | null>,
    page: Page | null,
    order: Order,
    pacer: Pacer | null,
    fold: Fold<S, T>,
  ): Promise<T> {
    await pacer?.next();
    const { result } = fold;
    const source = await make();
    if (!source) return result;
    await fold.begin?.(source);
    if (source.aggregate && page !== null) {
      Object.assign(result, await source.aggregate.totals());
      result.rows = page.limit > 0 ? await source.aggregate.page(page, order) : [];
      return result;
    }
    const picked = new PagePick<unknown>(page, order);
    const next = stretches(source.chunks('asc', 'fold'));
    for (let turn = 0; ; turn++) {
      if (turn > 0) await pacer?.next();
      const stretch = await next.next();
      if (stretch.done) break;
      for (const item of stretch.value) {
        picked.offer(item);
        fold.add(item, source);
      }
    }
    fold.end?.(source);
    this.kept_most = Math.max(this.kept_most, picked.kept_most);
    result.total = picked.total;
    result.rows = picked.rows().map((item) => source.row(item));
    return result;
  }

  /** Lets `read` take turns of `given` (its owner ends it) or of a pacer of its own. */
  private async inTurns<T>(
    given: Pacer | undefined,
    read: (pacer: Pacer) => Promise<T>,
  ): Promise<T> {
    const pacer = given ?? this.turns.pacer();
    try {
      return await read(pacer);
    } finally {
      if (!given) pacer.end();
    }
  }

  /**
   * The rows of a page of a selection in `order`, a batch per stretch read (empty ones
   * skipped), each stretch in a turn of `pacer`; no stretch is read once the page is full, and
   * no item is taken past its end.
   */
  private async *stream<I, R>(
    made: Maybe<HistorySource<I, R> | null>,
    page: Page,
    order: Order,
    pacer: Pacer | null,
  ): AsyncGenerator<R[]> {
    const source = await made;
    if (!source) return;
    const take = new PageTake(page);
    const next = stretches(source.chunks(order, 'stream'));
    try {
      while (!take.full) {
        await pacer?.next();
        const stretch = await next.next();
        if (stretch.done) return;
        const batch: R[] = [];
        for (const item of stretch.value) {
          if (take.offer()) batch.push(source.row(item));
          if (take.full) break;
        }
        if (batch.length > 0) yield batch;
      }
    } finally {
      await next.return?.();
    }
  }
}
