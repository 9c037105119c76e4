// The store's read interface for history: what the payments room's lists and reports, the
// chat room's usage figures and the dashboard ask for, each answered at the cost of what it
// returns (a page reads its rows; a day reads that day's entries). `JsonFileReads` answers
// from the live document and the archive's indexes; a PostgreSQL backend implements the same
// interface with queries. The wallet, API-log and usage reads are written once for both
// (HistoryReads, history-reads.ts): here they get their sources, stretches of index entries.
import { ALL, allOfAction, type Archive, type ListKind, hash32 } from './archive.js';
import { methodCode, serviceCode, statusCode, txnTagParts } from './history-tags.js';
import type { Entry, IndexList } from './index-list.js';
import {
  HistoryReads,
  type LogSource,
  type Order,
  type UsageSource,
  type WalletSource,
  statusMatches,
  txnFieldsMatch,
} from './history-reads.js';
import { ReadSnapshot } from './snapshot.js';
import type { HistoryRecord, Row, TableName, Tables } from './state.js';
import type { Pacer } from './turns.js';
import type {
  AuditSelect,
  KeyStats,
  LogSelect,
  Page,
  RecentTxn,
  StoreReads,
  TableIndex,
  TxnRow,
  TxnSelect,
  UsageSelect,
  WalletLine,
  WalletSelect,
} from './types.js';

/** A transaction as the duplicate window keeps it. */
export function recentOf(txn: RecentTxn): RecentTxn {
  return {
    id: txn.id,
    account_id: txn.account_id,
    service: txn.service,
    subject: txn.subject,
    amount_micros: txn.amount_micros,
    created_at: txn.created_at,
  };
}

/** A transaction of a read: a live row, or an archived index entry whose row is read on demand. */
interface TxnCandidate {
  created_ms: number;
  seq: number;
  entry: Entry | null;
  row: TxnRow | null;
}

/** A history index entry, with its record when a filter had to read it. */
interface Kept {
  entry: Entry;
  record?: HistoryRecord;
}

const DAY_MS = 86_400_000;
/** Rows per chunk of txnChunks (a fraction of a millisecond of reading; the event loop runs between chunks). */
const ROWS_PER_CHUNK = 16;

/** Index entries read per stretch (a turn) by the reads with totals (`walletInTurns`...). */
const ENTRIES_PER_TURN = 512;

/** Index entries read per stretch by the streamed reads (`walletLines`...): each may read its record. */
const STREAM_ENTRIES_PER_TURN = 256;

/**
 * The items `keep` makes of entries [start, end) of `list`, in `order`, a stretch of entries
 * at a time (its entries read when it is asked for; a stream's items made as they are
 * taken): the file store's primitive under the history reads (history-reads.ts).
 */
function* entryStretches<T>(
  list: IndexList,
  [start, end]: [number, number],
  order: Order,
  use: 'fold' | 'stream',
  keep: (entry: Entry) => T | undefined,
): Generator<Iterable<T>, void, void> {
  const per = use === 'fold' ? ENTRIES_PER_TURN : STREAM_ENTRIES_PER_TURN;
  for (let done = 0; done < end - start; done += per) {
    const [low, high] =
      order === 'asc'
        ? [start + done, Math.min(end, start + done + per)]
        : [Math.max(start, end - done - per), end - done];
    const entries = list.read(low, high);
    // Totals take every item of a stretch: an array (no generator step per item).
    yield use === 'fold' ? keptAll(entries, order, keep) : kept(entries, order, keep);
  }
}

function keptAll<T>(entries: Entry[], order: Order, keep: (entry: Entry) => T | undefined): T[] {
  const out: T[] = [];
  const n = entries.length;
  for (let i = 0; i < n; i++) {
    const item = keep(entries[order === 'asc' ? i : n - 1 - i]!);
    if (item !== undefined) out.push(item);
  }
  return out;
}

function* kept<T>(
  entries: Entry[],
  order: Order,
  keep: (entry: Entry) => T | undefined,
): Generator<T, void, void> {
  const n = entries.length;
  for (let i = 0; i < n; i++) {
    const item = keep(entries[order === 'asc' ? i : n - 1 - i]!);
    if (item !== undefined) yield item;
  }
}

function range(
  list: IndexList,
  from_ms: number | undefined,
  to_ms: number | undefined,
  lag_ms = 0,
): [number, number] {
  const start = from_ms === undefined ? 0 : list.lowerBound(from_ms);
  const end = to_ms === undefined ? list.count : list.lowerBound(to_ms + lag_ms + 1);
  return [start, Math.max(start, end)];
}

/**
 * What the JSON-file history reads use of their store (FileStore): the archive's indexes,
 * and the live rows of payment transactions by id, by account and all of them.
 */
export interface FileReadsSource {
  readonly archive: Archive;
  get<T extends TableName>(name: T, id: string): Row<T> | undefined;
  rows<T extends TableName>(name: T): Tables[T];
  indexBy<T extends TableName>(name: T, field: keyof Row<T> & string): TableIndex<T>;
}

export class JsonFileReads extends HistoryReads implements StoreReads {
  constructor(private readonly store: FileReadsSource) {
    super();
  }

  private get archive(): Archive {
    return this.store.archive;
  }

  /**
   * The list `kind`/`key` and its entries [start, end) in a select's time range, as of
   * `as_of` (its entries up to the length the snapshot first saw; without one, all of them).
   * null: no such list, or none of it in the snapshot.
   */
  private listRange(
    kind: ListKind,
    key: string,
    select: { from_ms?: number | undefined; to_ms?: number | undefined },
    as_of: ReadSnapshot | undefined,
    lag_ms = 0,
  ): { list: IndexList; range: [number, number] } | null {
    const list = this.archive.existing(kind, key);
    const count = as_of ? as_of.end(`${kind}/${key}`, list) : (list?.count ?? 0);
    if (!list || count === 0) return null;
    const [start, end] = range(list, select.from_ms, select.to_ms, lag_ms);
    const clipped = Math.min(end, count);
    return { list, range: [Math.min(start, clipped), clipped] };
  }

  async txns(select: TxnSelect, page: Page | null): Promise<{ total: number; rows: TxnRow[] }> {
    const live: TxnRow[] = [];
    const live_rows =
      select.account_id !== null
        ? this.store.indexBy('payment_txns', 'account_id').rows(select.account_id)
        : Object.values(this.store.rows('payment_txns'));
    for (const row of live_rows) if (this.rowMatches(row, select)) live.push(row);
    const list = this.archive.existing('txn', select.account_id ?? ALL);
    const candidates: TxnCandidate[] = live.map((row) => ({
      created_ms: Date.parse(row.created_at),
      seq: Infinity,
      entry: null,
      row,
    }));
    const entryMatches = this.entryFilter(select);
    const unfiltered = select.service === undefined && select.status === undefined;
    // Service and status alone are counted per list (tag counts): no walk for the total.
    const by_tag_only =
      select.match === undefined && select.from_ms === undefined && select.to_ms === undefined;
    let archived_total = 0;
    if (list) {
      const [start, end] = range(list, select.from_ms, select.to_ms, this.archive.max_lag_ms);
      if (by_tag_only && page !== null && (list.tag_counts !== null || unfiltered)) {
        // The newest page: entries are in finalization order and a transaction is finalized
        // after it is created, so once `need` rows are found, an entry finalized before the
        // need-th newest creation cannot belong to the page.
        archived_total = unfiltered
          ? list.count
          : (list.tag_counts ?? []).reduce(
              (sum, n, code) => sum + (this.tagFilter(select)!(code) ? n : 0),
              0,
            );
        const need = page.offset + page.limit;
        const found: number[] = live.map((row) => Date.parse(row.created_at));
        let threshold = -Infinity;
        let since_sort = need;
        let matched = 0;
        list.walkBack(start, end, (entry) => {
          if (found.length >= need && since_sort >= need) {
            // A stale threshold is lower than the true one: it only stops the walk later.
            found.sort((a, b) => b - a);
            found.length = need;
            threshold = found[need - 1]!;
            since_sort = 0;
          }
          if (found.length >= need && entry.ts_ms < threshold) return false;
          if (!entryMatches(entry)) return true;
          candidates.push({ created_ms: entry.aux, seq: entry.seq, entry, row: null });
          found.push(entry.aux);
          since_sort++;
          // All matching entries found: nothing older can be in the page.
          return ++matched < archived_total;
        });
      } else {
        list.walk(start, end, (entry) => {
          if (entryMatches(entry))
            candidates.push({ created_ms: entry.aux, seq: entry.seq, entry, row: null });
          return true;
        });
        archived_total = candidates.length - live.length;
      }
    }
    return this.pickTxns(candidates, select, page, live.length + archived_total);
  }

  /**
   * The page of `candidates` (live rows and archived entries of a transactions read), newest
   * created first, each archived row read only if it is in the page or `select.match` must
   * test it. `total`: candidates counted without `match`.
   */
  private pickTxns(
    candidates: TxnCandidate[],
    select: TxnSelect,
    page: Page | null,
    total: number,
  ): { total: number; rows: TxnRow[] } {
    candidates.sort((a, b) => b.created_ms - a.created_ms || b.seq - a.seq);
    const load = (candidate: TxnCandidate) =>
      (candidate.row ??= this.archive.txnOf(candidate.entry!) as TxnRow);
    if (select.match) {
      const rows: TxnRow[] = [];
      let matched = 0;
      for (const candidate of candidates) {
        const row = load(candidate);
        if (candidate.entry && !select.match(row)) continue;
        matched++;
        if (page === null || (matched > page.offset && rows.length < page.limit)) rows.push(row);
      }
      return { total: matched, rows };
    }
    const chosen =
      page === null ? candidates : candidates.slice(page.offset, page.offset + page.limit);
    return { total, rows: chosen.map(load) };
  }

  async *txnChunks(
    select: TxnSelect,
    order: 'asc' | 'desc',
    given?: Pacer,
  ): AsyncGenerator<TxnRow[]> {
    const desc = order === 'desc';
    type Candidate = TxnCandidate;
    // Pending rows are few (live state); they sort before archived ones of the same creation time.
    let buffer: Candidate[] = [];
    // The live rows and the list's length are taken at one point (a snapshot's, or now): a
    // transaction finalized in between would be in neither, or in both.
    const as_of = select.as_of ?? new ReadSnapshot();
    const key = select.account_id ?? ALL;
    for (const row of as_of.once(`txn-live/${key}`, () => this.liveTxns(select.account_id)))
      if (this.rowMatches(row, select))
        buffer.push({ created_ms: Date.parse(row.created_at), seq: Infinity, entry: null, row });
    const compare = (a: Candidate, b: Candidate) =>
      desc
        ? b.created_ms - a.created_ms || b.seq - a.seq
        : a.created_ms - b.created_ms || a.seq - b.seq;
    const lag = this.archive.max_lag_ms;
    const listed = this.listRange('txn', key, select, as_of, lag);
    const list = listed?.list;
    const matches = this.entryFilter(select);
    const pacer = given ?? this.turns.pacer();
    let out: TxnRow[] = [];
    const take = async function* (
      this: JsonFileReads,
      ready: Candidate[],
    ): AsyncGenerator<TxnRow[]> {
      for (const candidate of ready) {
        const row = candidate.row ?? (this.archive.txnOf(candidate.entry!) as TxnRow);
        if (candidate.entry && select.match && !select.match(row)) continue;
        out.push(row);
        if (out.length >= ROWS_PER_CHUNK) {
          yield out;
          out = [];
          await pacer.next();
        }
      }
    }.bind(this);
    try {
      await pacer.next();
      if (list) {
        const [start, end] = listed.range;
        // Entries are in finalization order, and created <= finalized <= created + max_lag:
        // walking a chunk of entries at a time, a buffered candidate is in its final place once
        // no entry not yet seen can come before it (a window of max_lag, not the whole range).
        for (let i = 0; i < end - start; i += 512) {
          const [low, high] = desc
            ? [Math.max(start, end - i - 512), end - i]
            : [start + i, Math.min(end, start + i + 512)];
          const chunk = list.read(low, high);
          for (const entry of chunk)
            if (matches(entry))
              buffer.push({ created_ms: entry.aux, seq: entry.seq, entry, row: null });
          const edge = desc ? chunk[0]!.ts_ms : chunk.at(-1)!.ts_ms - lag;
          buffer.sort(compare);
          const cut = buffer.findIndex((c) => (desc ? c.created_ms < edge : c.created_ms > edge));
          const ready = cut === -1 ? buffer : buffer.slice(0, cut);
          buffer = cut === -1 ? [] : buffer.slice(cut);
          yield* take(ready);
          await pacer.next();
        }
      }
      buffer.sort(compare);
      yield* take(buffer);
    } finally {
      if (!given) pacer.end();
    }
    if (out.length > 0) yield out;
  }

  /** The live (pending) transactions of an account (null: of every account), as they are now. */
  private liveTxns(account_id: string | null): TxnRow[] {
    return account_id !== null
      ? [...this.store.indexBy('payment_txns', 'account_id').rows(account_id)]
      : Object.values(this.store.rows('payment_txns'));
  }

  /** The test of an index entry against service, status and created-at bounds. */
  private entryFilter(select: TxnSelect): (entry: Entry) => boolean {
    const wanted = this.tagFilter(select);
    return (entry) =>
      (wanted === null || wanted(this.archive.tagOf(entry))) &&
      (select.from_ms === undefined || entry.aux >= select.from_ms) &&
      (select.to_ms === undefined || entry.aux <= select.to_ms);
  }

  /** The test of a txn tag code against service and status (null: every tag passes). */
  private tagFilter(select: TxnSelect): ((tag: number) => boolean) | null {
    if (select.service === undefined && select.status === undefined) return null;
    const tags = this.archive.tags;
    const service_code = select.service !== undefined ? serviceCode(tags, select.service) : null;
    const status_code = select.status !== undefined ? statusCode(tags, select.status) : null;
    return (tag) => {
      const [service, status] = txnTagParts(tag);
      return (
        (service_code === null || service === service_code) &&
        (status_code === null || status === status_code)
      );
    };
  }

  private rowMatches(row: TxnRow, select: TxnSelect): boolean {
    return txnFieldsMatch(row, select) && (select.match === undefined || select.match(row));
  }

  async recentSince(since_ms: number): Promise<RecentTxn[]> {
    const list = this.archive.existing('txn', ALL);
    if (!list) return [];
    const rows: RecentTxn[] = [];
    // Each transaction is read whole from its record and only its compared fields are kept.
    list.walk(list.lowerBound(since_ms), list.count, (entry) => {
      rows.push(recentOf(this.archive.txnOf(entry) as TxnRow));
      return true;
    });
    return rows;
  }

  protected walletSource(select: WalletSelect): WalletSource<Entry> | null {
    const listed = this.listRange('wal', select.account_id ?? ALL, select, select.as_of);
    if (!listed) return null;
    const { list, range } = listed;
    const keep = (entry: Entry) =>
      select.match && !select.match(this.archive.postingOf(entry)) ? undefined : entry;
    return {
      chunks: (order, use) => entryStretches(list, range, order, use, keep),
      row: (entry) => this.walletLine(entry),
      delta: (entry) => entry.tag,
      balance: (entry) => entry.aux,
      edges: () => {
        const [start, end] = range;
        const before = start > 0 ? list.read(start - 1, start)[0]!.aux : 0;
        if (start >= end) return { opening_micros: before, closing_micros: before };
        const first = list.read(start, start + 1)[0]!;
        return {
          opening_micros: first.aux - first.tag,
          closing_micros: list.read(end - 1, end)[0]!.aux,
        };
      },
    };
  }

  /** A wallet index entry's posting, with the balance before and after it. */
  private walletLine(entry: Entry): WalletLine {
    const record = this.archive.record(entry);
    const op = record.ops[entry.op];
    if (op?.o !== 'post')
      throw new Error(`invariant: record ${entry.seq} holds no posting at op ${entry.op}`);
    const p = op.p;
    const hold_id = p.hold?.action === 'open' ? p.hold.id : null;
    const resolved = hold_id
      ? record.ops.find(
          (o) => o.o === 'post' && o.p.hold?.id === hold_id && o.p.hold.action !== 'open',
        )
      : undefined;
    return {
      posting: p,
      ...(resolved?.o === 'post' ? { resolved_by: resolved.p } : {}),
      account_id: p.account_id!,
      delta_micros: entry.tag,
      opening_micros: entry.aux - entry.tag,
      closing_micros: entry.aux,
    };
  }

  protected logSource(select: LogSelect): LogSource<Kept> | null {
    const listed = this.listRange('log', select.account_id ?? ALL, select, select.as_of);
    if (!listed) return null;
    const test = this.logFilter(select);
    const keep = (entry: Entry): Kept | undefined => {
      const record = test(entry);
      return record === false ? undefined : record ? { entry, record } : { entry };
    };
    return {
      chunks: (order, use) => entryStretches(listed.list, listed.range, order, use, keep),
      row: ({ entry, record }) => record ?? this.logOf(entry),
      status: ({ entry }) => entry.tag,
      latency_ms: ({ entry }) => entry.aux2,
    };
  }

  /**
   * The test of an API log index entry against a select: false when it does not match; the
   * record when reading it was needed to decide; else undefined (a match, record not read).
   */
  private logFilter(select: LogSelect): (entry: Entry) => HistoryRecord | false | undefined {
    const method_code = select.method !== undefined ? methodCode(select.method) : null;
    const service_code =
      select.service !== undefined ? serviceCode(this.archive.tags, select.service) : null;
    return (entry) => {
      if (select.status !== undefined && !statusMatches(entry.tag, select.status)) return false;
      if (method_code !== null && Math.floor(entry.aux / 8) !== method_code) return false;
      let record: HistoryRecord | undefined;
      if (service_code !== null && entry.aux % 8 !== service_code) {
        // Outbound calls (webhooks) name their transaction, not a path: its service decides.
        if (entry.aux % 8 !== 0) return false;
        record = this.logOf(entry);
        if (
          record.direction !== 'outbound' ||
          this.store.get('payment_txns', String(record.txn_id))?.service !== select.service
        )
          return false;
      }
      if (select.match) {
        record ??= this.logOf(entry);
        if (!select.match(record)) return false;
      }
      return record;
    };
  }

  /** The usage totals (count, cost, tokens) come from the entries; a `match` reads every record. */
  protected usageSource(select: UsageSelect): UsageSource<Kept> | null {
    const listed = this.listRange('use', select.account_id, select, select.as_of);
    if (!listed) return null;
    const keep = (entry: Entry): Kept | undefined => {
      if (!select.match) return { entry };
      const record = this.archive.historyOf(entry);
      return select.match(record) ? { entry, record } : undefined;
    };
    return {
      chunks: (order, use) => entryStretches(listed.list, listed.range, order, use, keep),
      row: ({ entry, record }) => record ?? this.archive.historyOf(entry),
      cost_micros: ({ entry }) => entry.aux,
      tokens: ({ entry }) => entry.aux2,
    };
  }

  private logOf(entry: Entry): HistoryRecord {
    return this.archive.historyOf(entry);
  }

  async audit(select: AuditSelect, page: Page): Promise<{ total: number; rows: HistoryRecord[] }> {
    const list = this.archive.existing('aud', select.account_id ?? ALL);
    if (!list) return { total: 0, rows: [] };
    const rows: HistoryRecord[] = [];
    if (select.action === undefined) {
      const end = Math.max(0, list.count - page.offset);
      list.walkBack(Math.max(0, end - page.limit), end, (entry) => {
        rows.push(this.archive.historyOf(entry));
        return true;
      });
      return { total: list.count, rows };
    }
    if (select.account_id === null) {
      // Every account's records of one action have a list of their own.
      const of_action = this.archive.existing('aud', allOfAction(select.action));
      if (!of_action) return { total: 0, rows: [] };
      const end = Math.max(0, of_action.count - page.offset);
      of_action.walkBack(Math.max(0, end - page.limit), end, (entry) => {
        rows.push(this.archive.historyOf(entry));
        return true;
      });
      return { total: of_action.count, rows };
    }
    // One account's records (its own list), filtered by the action's hash, then by the action.
    const hash = hash32(select.action);
    let total = 0;
    list.walkBack(0, list.count, (entry) => {
      if (entry.tag !== hash) return true;
      const record = this.archive.historyOf(entry);
      if (record.action !== select.action) return true;
      total++;
      if (total > page.offset && rows.length < page.limit) rows.push(record);
      return true;
    });
    return { total, rows };
  }

  async dailySpend(
    account_id: string,
    first_day_ms: number,
    days: number,
  ): Promise<Array<Map<string, number>>> {
    const out = Array.from({ length: days }, () => new Map<string, number>());
    const list = this.archive.existing('use', account_id);
    if (!list) return out;
    const [start, end] = range(list, first_day_ms, first_day_ms + days * DAY_MS - 1);
    list.walk(start, end, (entry) => {
      const day = Math.floor((entry.ts_ms - first_day_ms) / DAY_MS);
      if (day < 0 || day >= days || entry.aux <= 0) return true;
      const tier = this.archive.tierName(entry.tag);
      out[day]!.set(tier, (out[day]!.get(tier) ?? 0) + entry.aux);
      return true;
    });
    return out;
  }

  async keyStats(key_id: string): Promise<KeyStats> {
    return this.archive.keys.get(key_id) ?? { requests: 0, cost_micros: 0, last_used: null };
  }
}
