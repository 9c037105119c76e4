// History reads on the PostgreSQL store: SQL over indexed tables, each reading what it returns
// (docs/store-postgres.md, "History reads are SQL"). The answers are the JSON-file store's
// (store/reads.ts): the same pages, totals, orders and snapshots. The wallet, API-log and usage
// reads are the same code too (HistoryReads, store/history-reads.ts): this file gives them their
// sources, a keyset walk and, where SQL can total the selection, an aggregate.
//   payment transactions: aihub.rows (tbl payment_txns), by (account_id, created_at);
//   wallet lines: aihub.wallet_lines, by (account_id, n) and (at, n);
//   API logs, usage, audit: aihub.history, by (kind, account_id, at, n) and (kind, at, n).
// A filter that is a JavaScript function (`match`) reads the candidates of its range a chunk at
// a time, as the JSON-file store does; the others are WHERE clauses.
import type pg from 'pg';
import { methodCode, serviceCode, type HistoryTags } from '../history-tags.js';
import {
  HistoryReads,
  type LogSource,
  type Order,
  type UsageSource,
  type WalletSource,
  txnFieldsMatch,
} from '../history-reads.js';
import { ReadSnapshot } from '../snapshot.js';
import type {
  KeyStats,
  AuditSelect,
  LogSelect,
  Page,
  StoreReads,
  RecentTxn,
  TxnRow,
  TxnSelect,
  UsageSelect,
  WalletLine,
  WalletSelect,
} from '../types.js';
import type { HistoryRecord, Posting, Row, State, TableName } from '../state.js';
import type { Pacer } from '../turns.js';
import type { Outage } from './outage.js';
import { holdsNul } from './keys.js';
import { StoreUnavailableError } from '../../kernel/errors.js';

const DAY_MS = 86_400_000;
/** Rows per chunk handed to a report (as the JSON-file store's txnChunks). */
const ROWS_PER_CHUNK = 16;
/** Rows read per query when a range is walked (between two turns). */
const PAGE_ROWS = 512;

const iso = (ms: number) => new Date(ms).toISOString();

interface WalletRow {
  n: string;
  account_id: string;
  delta: string;
  balance: string;
  posting: Posting;
  resolved_by: Posting | null;
}

interface HistRow {
  n: string;
  tag: string | null;
  aux: string | null;
  aux2: number | null;
  record: HistoryRecord;
}

/** A point in history several reads agree on: per list, the database snapshot of its first read. */
interface PgPoint {
  snap: string;
  live: TxnRow[];
}

function lineOf(row: WalletRow): WalletLine {
  const delta = Number(row.delta);
  const balance = Number(row.balance);
  return {
    posting: row.posting,
    ...(row.resolved_by ? { resolved_by: row.resolved_by } : {}),
    account_id: row.account_id,
    delta_micros: delta,
    opening_micros: balance - delta,
    closing_micros: balance,
  };
}

// Selected as text: an ORDER BY must name the table's column (`l.n`, `t.n`), not this output.
const WALLET_COLUMNS = `n::text AS n, account_id, delta::text AS delta, balance::text AS balance, posting, resolved_by`;
const HIST_COLUMNS = `n::text AS n, tag::text AS tag, aux::text AS aux, aux2, record`;

const recordOf = (row: HistRow): HistoryRecord => row.record;

/** The rows of a walk's chunks that `keep` keeps, a chunk per query. */
async function* kept<R>(
  walk: AsyncGenerator<R[]>,
  keep: (rows: R[]) => R[] | Promise<R[]>,
): AsyncGenerator<R[]> {
  for await (const rows of walk) yield await keep(rows);
}

/** SQL text and parameters, built a clause at a time. */
class Where {
  readonly clauses: string[] = [];
  readonly params: unknown[] = [];
  add(clause: (p: (value: unknown) => string) => string): this {
    this.clauses.push(
      clause((value) => {
        this.params.push(value);
        return `$${this.params.length}`;
      }),
    );
    return this;
  }
  get sql(): string {
    return this.clauses.length > 0 ? this.clauses.join(' AND ') : 'true';
  }
}

/** The tally tag of a selection by service and status (aihub.txn_tags, schema.ts). */
function txnTag(select: TxnSelect): string {
  if (select.service !== undefined && select.status !== undefined)
    return `service+status:${select.service}:${select.status}`;
  if (select.service !== undefined) return `service:${select.service}`;
  if (select.status !== undefined) return `status:${select.status}`;
  return 'all';
}

/**
 * What the PostgreSQL history reads use of their store (PgStore): its pool, its outage
 * watch and statement count, and reads through its cache (a row's `match` test).
 */
export interface PgReadsSource {
  readonly pool: pg.Pool;
  readonly outage: Outage;
  /** What the rooms tag history with (an API log's service code in `aux`). */
  readonly history_tags: HistoryTags;
  sent(kind: 'history'): void;
  read<T>(fn: (state: State) => T): Promise<T>;
  get<T extends TableName>(name: T, id: string): Row<T> | undefined;
}

export class PgReads extends HistoryReads implements StoreReads {
  constructor(private readonly store: PgReadsSource) {
    super();
  }

  private async rows<R extends pg.QueryResultRow>(text: string, params: unknown[]): Promise<R[]> {
    if (holdsNul(params)) return []; // no stored text holds U+0000: nothing matches
    this.store.sent('history');
    try {
      const { rows } = await this.store.pool.query<R>(text, params);
      this.store.outage.served();
      return rows;
    } catch (error) {
      this.store.outage.failed(error, 1);
      throw new StoreUnavailableError(
        `the database is unavailable (${(error as Error)?.message ?? String(error)})`,
        { cause: error },
      );
    }
  }

  /** The database snapshot a list's reads through `as_of` agree on (taken at its first read), with the live transactions of `key` then. */
  private point(as_of: ReadSnapshot, name: string, account_id: string | null): Promise<PgPoint> {
    return as_of.once(`pg/${name}`, async () => {
      const where = new Where()
        .add(() => `tbl = 'payment_txns'`)
        .add(() => `row->>'stage' <> 'final'`);
      if (name.startsWith('txn') && account_id !== null)
        where.add((p) => `row->>'account_id' = ${p(account_id)}`);
      const [first] = await this.rows<{ snap: string; live: TxnRow[] | null }>(
        name.startsWith('txn')
          ? `SELECT pg_current_snapshot()::text AS snap, (SELECT json_agg(row) FROM aihub.rows WHERE ${where.sql}) AS live`
          : `SELECT pg_current_snapshot()::text AS snap, NULL::json AS live`,
        name.startsWith('txn') ? where.params : [],
      );
      return { snap: first!.snap, live: first!.live ?? [] };
    });
  }

  // ---- payment transactions ---------------------------------------------------------------

  private txnWhere(select: TxnSelect, final_only: boolean): Where {
    const where = new Where().add(() => `tbl = 'payment_txns'`);
    if (select.account_id !== null)
      where.add((p) => `row->>'account_id' = ${p(select.account_id)}`);
    if (select.service !== undefined) where.add((p) => `row->>'service' = ${p(select.service)}`);
    if (select.status !== undefined) where.add((p) => `row->>'status' = ${p(select.status)}`);
    if (select.from_ms !== undefined)
      where.add((p) => `row->>'created_at' >= ${p(iso(select.from_ms!))}`);
    if (select.to_ms !== undefined)
      where.add((p) => `row->>'created_at' <= ${p(iso(select.to_ms!))}`);
    if (final_only) where.add(() => `row->>'stage' = 'final'`);
    return where;
  }

  /** Newest created first; among equal times, unfinished first, then the latest written. */
  private static readonly TXN_DESC = `row->>'created_at' DESC, (row->>'stage' <> 'final') DESC, ver DESC`;
  private static readonly TXN_ASC = `row->>'created_at' ASC, (row->>'stage' <> 'final') ASC, ver ASC`;

  async txns(select: TxnSelect, page: Page | null): Promise<{ total: number; rows: TxnRow[] }> {
    const where = this.txnWhere(select, false);
    if (!select.match) {
      // Over every account, by service and status alone: the tallies (a few rows), not a
      // count of every transaction; otherwise a count bounded by the account's or the range's index.
      const tallied =
        select.account_id === null &&
        select.from_ms === undefined &&
        select.to_ms === undefined &&
        select.as_of === undefined;
      const [counted] = tallied
        ? await this.rows<{ n: string }>(
            'SELECT coalesce(sum(n), 0)::text AS n FROM aihub.tallies WHERE tag = $1',
            [txnTag(select)],
          )
        : await this.rows<{ n: string }>(
            `SELECT count(*)::text AS n FROM aihub.rows WHERE ${where.sql}`,
            where.params,
          );
      const limit = page ? `OFFSET ${page.offset} LIMIT ${page.limit}` : '';
      const rows = await this.rows<{ row: TxnRow }>(
        `SELECT row FROM aihub.rows WHERE ${where.sql} ORDER BY ${PgReads.TXN_DESC} ${limit}`,
        where.params,
      );
      return { total: Number(counted!.n), rows: rows.map((r) => r.row) };
    }
    const rows: TxnRow[] = [];
    let matched = 0;
    for await (const chunk of this.txnWalk(where, 'desc', null)) {
      const kept = await this.store.read(() => chunk.filter((row) => select.match!(row)));
      for (const row of kept) {
        matched++;
        if (page === null || (matched > page.offset && rows.length < page.limit)) rows.push(row);
      }
    }
    return { total: matched, rows };
  }

  /** The rows of a transactions selection in order, PAGE_ROWS at a time (keyset pages). */
  private async *txnWalk(
    where: Where,
    order: 'asc' | 'desc',
    snap: string | null,
  ): AsyncGenerator<TxnRow[]> {
    let after: { created: string; ver: string } | null = null;
    const cmp = order === 'desc' ? '<' : '>';
    for (;;) {
      const w = new Where();
      w.clauses.push(...where.clauses);
      w.params.push(...where.params);
      if (snap !== null) w.add((p) => `pg_visible_in_snapshot(xid, ${p(snap)}::pg_snapshot)`);
      if (after) {
        const a = after;
        w.add(
          (p) => `(row->>'created_at', ver) ${cmp} (${p(a.created)}::text, ${p(a.ver)}::bigint)`,
        );
      }
      const rows = await this.rows<{ row: TxnRow; ver: string }>(
        `SELECT r.row, r.ver::text AS ver FROM aihub.rows r WHERE ${w.sql}
         ORDER BY r.row->>'created_at' ${order}, r.ver ${order} LIMIT ${PAGE_ROWS}`,
        w.params,
      );
      if (rows.length === 0) return;
      const last = rows.at(-1)!;
      after = { created: last.row.created_at, ver: last.ver };
      yield rows.map((r) => r.row);
      if (rows.length < PAGE_ROWS) return;
    }
  }

  async *txnChunks(
    select: TxnSelect,
    order: 'asc' | 'desc',
    given?: Pacer,
  ): AsyncGenerator<TxnRow[]> {
    const pacer = given ?? this.turns.pacer();
    let out: TxnRow[] = [];
    try {
      await pacer.next();
      const as_of = select.as_of ?? new ReadSnapshot();
      const point = await this.point(
        as_of,
        `txn/${select.account_id ?? '_all'}`,
        select.account_id,
      );
      // The unfinished ones as the snapshot found them, merged with the finalized ones it sees.
      const live = point.live
        .filter((row) => txnFieldsMatch(row, select))
        .sort((a, b) =>
          order === 'desc'
            ? b.created_at.localeCompare(a.created_at)
            : a.created_at.localeCompare(b.created_at),
        );
      const before = (a: TxnRow, b: TxnRow) =>
        order === 'desc' ? a.created_at >= b.created_at : a.created_at <= b.created_at;
      const emit = async function* (this: PgReads, rows: TxnRow[]): AsyncGenerator<TxnRow[]> {
        const kept = select.match
          ? await this.store.read(() => rows.filter((row) => select.match!(row)))
          : rows;
        for (const row of kept) {
          out.push(row);
          if (out.length >= ROWS_PER_CHUNK) {
            yield out;
            out = [];
            await pacer.next();
          }
        }
      }.bind(this);
      let l = 0;
      for await (const chunk of this.txnWalk(this.txnWhere(select, true), order, point.snap)) {
        const merged: TxnRow[] = [];
        for (const row of chunk) {
          while (l < live.length && before(live[l]!, row)) merged.push(live[l++]!);
          merged.push(row);
        }
        yield* emit(merged);
        await pacer.next();
      }
      yield* emit(live.slice(l));
    } finally {
      if (!given) pacer.end();
    }
    if (out.length > 0) yield out;
  }

  async recentSince(since_ms: number): Promise<RecentTxn[]> {
    const rows = await this.rows<RecentTxn & { amount_micros: string }>(
      `SELECT id, row->>'account_id' AS account_id, row->>'service' AS service, row->>'subject' AS subject,
         row->>'amount_micros' AS amount_micros, row->>'created_at' AS created_at
       FROM aihub.rows WHERE tbl = 'payment_txns' AND row->>'stage' = 'final'
         AND row->>'finalized_at' >= $1 ORDER BY row->>'finalized_at'`,
      [iso(since_ms)],
    );
    return rows.map((row) => ({ ...row, amount_micros: Number(row.amount_micros) }));
  }

  // ---- wallet lines -------------------------------------------------------------------------

  private async walletWhere(select: WalletSelect): Promise<Where> {
    const where = new Where();
    if (select.account_id !== null) where.add((p) => `account_id = ${p(select.account_id)}`);
    if (select.from_ms !== undefined) where.add((p) => `at >= ${p(iso(select.from_ms!))}`);
    if (select.to_ms !== undefined) where.add((p) => `at <= ${p(iso(select.to_ms!))}`);
    if (select.as_of) {
      const { snap } = await this.point(select.as_of, `wal/${select.account_id ?? '_all'}`, null);
      where.add((p) => `pg_visible_in_snapshot(xid, ${p(snap)}::pg_snapshot)`);
    }
    return where;
  }

  protected async walletSource(select: WalletSelect): Promise<WalletSource<WalletRow>> {
    const where = await this.walletWhere(select);
    const keep = (rows: WalletRow[]) =>
      select.match ? this.store.read(() => rows.filter((row) => select.match!(row.posting))) : rows;
    return {
      chunks: (order) => kept(this.walk<WalletRow>('wallet_lines', where, order), keep),
      row: lineOf,
      delta: (row) => Number(row.delta),
      balance: (row) => Number(row.balance),
      edges: () => this.walletEdges(select, where),
      // Without a JavaScript filter, the totals are one aggregate over the range's index.
      aggregate: select.match
        ? undefined
        : {
            totals: async () => {
              const [totals] = await this.rows<{ n: string; credits: string; debits: string }>(
                `SELECT count(*)::text AS n, coalesce(sum(delta) FILTER (WHERE delta >= 0), 0)::text AS credits,
                   coalesce(-sum(delta) FILTER (WHERE delta < 0), 0)::text AS debits
                 FROM aihub.wallet_lines WHERE ${where.sql}`,
                where.params,
              );
              return {
                total: Number(totals!.n),
                credits_micros: Number(totals!.credits),
                debits_micros: Number(totals!.debits),
              };
            },
            page: async (page, order) =>
              (
                await this.rows<WalletRow>(
                  `SELECT ${WALLET_COLUMNS} FROM aihub.wallet_lines l WHERE ${where.sql} ORDER BY l.n ${order} OFFSET ${page.offset} LIMIT ${page.limit}`,
                  where.params,
                )
              ).map(lineOf),
          },
    };
  }

  /** A single account's balance before the range (or at its first line) and after its last line. */
  private async walletEdges(
    select: WalletSelect,
    where: Where,
  ): Promise<{ opening_micros: number; closing_micros: number }> {
    const before = new Where().add((p) => `account_id = ${p(select.account_id)}`);
    if (select.from_ms !== undefined) before.add((p) => `at < ${p(iso(select.from_ms!))}`);
    const [b] = await this.rows<{ v: string | null }>(
      `SELECT balance::text AS v FROM aihub.wallet_lines WHERE ${before.sql} ORDER BY n DESC LIMIT 1`,
      before.params,
    );
    const [f] = await this.rows<{ v: string | null }>(
      `SELECT (balance - delta)::text AS v FROM aihub.wallet_lines WHERE ${where.sql} ORDER BY n ASC LIMIT 1`,
      where.params,
    );
    const [l] = await this.rows<{ v: string | null }>(
      `SELECT balance::text AS v FROM aihub.wallet_lines WHERE ${where.sql} ORDER BY n DESC LIMIT 1`,
      where.params,
    );
    const at_before = b?.v == null ? 0 : Number(b.v);
    return {
      opening_micros: f?.v == null ? at_before : Number(f.v),
      closing_micros: l?.v == null ? at_before : Number(l.v),
    };
  }

  // ---- API logs, usage, audit ------------------------------------------------------------------

  private async histWhere(
    kind: string,
    account_id: string | null,
    select: {
      from_ms?: number | undefined;
      to_ms?: number | undefined;
      as_of?: ReadSnapshot | undefined;
    },
  ): Promise<Where> {
    const where = new Where().add((p) => `kind = ${p(kind)}`);
    if (account_id !== null) where.add((p) => `account_id = ${p(account_id)}`);
    if (select.from_ms !== undefined) where.add((p) => `at >= ${p(iso(select.from_ms!))}`);
    if (select.to_ms !== undefined) where.add((p) => `at <= ${p(iso(select.to_ms!))}`);
    if (select.as_of) {
      const { snap } = await this.point(select.as_of, `${kind}/${account_id ?? '_all'}`, null);
      where.add((p) => `pg_visible_in_snapshot(xid, ${p(snap)}::pg_snapshot)`);
    }
    return where;
  }

  /**
   * The rows of a selection of `table` (wallet_lines or history) in `order` of n (history: of
   * its time, then n, which grows with it), PAGE_ROWS per query: keyset pages on n.
   */
  private async *walk<R extends pg.QueryResultRow & { n: string }>(
    table: 'wallet_lines' | 'history',
    where: Where,
    order: Order,
  ): AsyncGenerator<R[]> {
    const [columns, by] =
      table === 'wallet_lines'
        ? [WALLET_COLUMNS, `t.n ${order}`]
        : [HIST_COLUMNS, `t.at ${order}, t.n ${order}`];
    let after: string | null = null;
    for (;;) {
      const w = new Where();
      w.clauses.push(...where.clauses);
      w.params.push(...where.params);
      if (after !== null) {
        const a = after;
        w.add((p) => `n ${order === 'desc' ? '<' : '>'} ${p(a)}::bigint`);
      }
      const rows = await this.rows<R>(
        `SELECT ${columns} FROM aihub.${table} t WHERE ${w.sql} ORDER BY ${by} LIMIT ${PAGE_ROWS}`,
        w.params,
      );
      if (rows.length === 0) return;
      after = rows.at(-1)!.n;
      yield rows;
      if (rows.length < PAGE_ROWS) return;
    }
  }

  /** The API-log filters SQL can apply (status, method, a service of inbound requests). */
  private async logWhere(select: LogSelect): Promise<Where> {
    const where = await this.histWhere('api_log', select.account_id, select);
    if (select.status !== undefined) {
      if (/^\dxx$/.test(select.status)) {
        const base = Number(select.status[0]) * 100;
        where.add((p) => `tag >= ${p(base)} AND tag < ${p(base + 100)}`);
      } else where.add((p) => `tag = ${p(Number(select.status))}`);
    }
    if (select.method !== undefined) {
      const code = methodCode(select.method);
      where.add((p) => `aux / 8 = ${p(code)}`);
    }
    if (select.service !== undefined) {
      const code = serviceCode(this.store.history_tags, select.service);
      // Outbound calls (webhooks) name their transaction, not a path: checked one by one below.
      where.add((p) => `(aux % 8 = ${p(code)} OR aux % 8 = 0)`);
    }
    return where;
  }

  /** The records of a log selection the SQL filters passed, through the checks SQL cannot make. */
  private logKeep(select: LogSelect, rows: HistRow[]): Promise<HistRow[]> {
    const service_code =
      select.service !== undefined ? serviceCode(this.store.history_tags, select.service) : null;
    if (service_code === null && !select.match) return Promise.resolve(rows);
    return this.store.read(() =>
      rows.filter((row) => {
        const aux = Number(row.aux);
        if (service_code !== null && aux % 8 !== service_code) {
          const record = row.record;
          if (
            record.direction !== 'outbound' ||
            this.store.get('payment_txns', String(record.txn_id))?.service !== select.service
          )
            return false;
        }
        return !select.match || select.match(row.record);
      }),
    );
  }

  protected async logSource(select: LogSelect): Promise<LogSource<HistRow>> {
    const where = await this.logWhere(select);
    return {
      chunks: (order) =>
        kept(this.walk<HistRow>('history', where, order), (rows) => this.logKeep(select, rows)),
      row: recordOf,
      status: (row) => Number(row.tag),
      latency_ms: (row) => row.aux2 ?? 0,
      // Without a check SQL cannot make, the totals are one aggregate over the range's index.
      aggregate:
        select.match || select.service !== undefined
          ? undefined
          : {
              totals: async () => {
                const [totals] = await this.rows<{
                  n: string;
                  errors: string;
                  latency: number | null;
                }>(
                  `SELECT count(*)::text AS n, count(*) FILTER (WHERE tag = 0 OR tag >= 400)::text AS errors,
                     sum(aux2) AS latency FROM aihub.history WHERE ${where.sql}`,
                  where.params,
                );
                return {
                  total: Number(totals!.n),
                  errors: Number(totals!.errors),
                  latency_total_ms: totals!.latency ?? 0,
                };
              },
              page: (page, order) => this.histPage(where, page, order),
            },
    };
  }

  protected async usageSource(select: UsageSelect): Promise<UsageSource<HistRow>> {
    const where = await this.histWhere('usage', select.account_id, select);
    const keep = (rows: HistRow[]) =>
      select.match ? this.store.read(() => rows.filter((row) => select.match!(row.record))) : rows;
    return {
      chunks: (order) => kept(this.walk<HistRow>('history', where, order), keep),
      row: recordOf,
      cost_micros: (row) => Number(row.aux ?? 0),
      tokens: (row) => row.aux2 ?? 0,
      aggregate: select.match
        ? undefined
        : {
            totals: async () => {
              const [totals] = await this.rows<{ n: string; cost: string; tokens: number | null }>(
                `SELECT count(*)::text AS n, coalesce(sum(aux), 0)::text AS cost, sum(aux2) AS tokens
                 FROM aihub.history WHERE ${where.sql}`,
                where.params,
              );
              return {
                total: Number(totals!.n),
                cost_micros: Number(totals!.cost),
                tokens: totals!.tokens ?? 0,
              };
            },
            page: (page, order) => this.histPage(where, page, order),
          },
    };
  }

  /** The records of a page of a history selection, by SQL. */
  private async histPage(where: Where, page: Page, order: Order): Promise<HistoryRecord[]> {
    const rows = await this.rows<HistRow>(
      `SELECT record FROM aihub.history WHERE ${where.sql}
       ORDER BY at ${order}, n ${order} OFFSET ${page.offset} LIMIT ${page.limit}`,
      where.params,
    );
    return rows.map(recordOf);
  }

  async audit(select: AuditSelect, page: Page): Promise<{ total: number; rows: HistoryRecord[] }> {
    const where = await this.histWhere('audit', select.account_id, {});
    if (select.action !== undefined) where.add((p) => `label = ${p(select.action)}`);
    const [counted] = await this.rows<{ n: string }>(
      `SELECT count(*)::text AS n FROM aihub.history WHERE ${where.sql}`,
      where.params,
    );
    const rows = await this.rows<HistRow>(
      `SELECT record FROM aihub.history WHERE ${where.sql} ORDER BY at DESC, n DESC OFFSET ${page.offset} LIMIT ${page.limit}`,
      where.params,
    );
    return { total: Number(counted!.n), rows: rows.map((r) => r.record) };
  }

  async dailySpend(
    account_id: string,
    first_day_ms: number,
    days: number,
  ): Promise<Array<Map<string, number>>> {
    const out = Array.from({ length: days }, () => new Map<string, number>());
    const rows = await this.rows<{ day: string; tier: string; cost: string }>(
      `SELECT floor((extract(epoch FROM at) * 1000 - $2::float8) / ${DAY_MS})::text AS day, label AS tier,
         sum(aux)::text AS cost
       FROM aihub.history WHERE kind = 'usage' AND account_id = $1 AND at >= $3 AND at < $4 AND aux > 0
       GROUP BY 1, 2`,
      [account_id, first_day_ms, iso(first_day_ms), iso(first_day_ms + days * DAY_MS)],
    );
    for (const row of rows) {
      const day = Number(row.day);
      if (day >= 0 && day < days) out[day]!.set(row.tier, Number(row.cost));
    }
    return out;
  }

  async keyStats(key_id: string): Promise<KeyStats> {
    const [row] = await this.rows<{
      requests: string;
      cost_micros: string;
      last_used: string | null;
    }>(
      'SELECT requests::text AS requests, cost_micros::text AS cost_micros, last_used FROM aihub.key_stats WHERE key_id = $1',
      [key_id],
    );
    return row
      ? {
          requests: Number(row.requests),
          cost_micros: Number(row.cost_micros),
          last_used: row.last_used,
        }
      : { requests: 0, cost_micros: 0, last_used: null };
  }
}
