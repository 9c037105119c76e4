// The storage contract: what the rooms use of a store, whichever backend holds it (the
// JSON-file store, gateway/store/store.ts; PostgreSQL, gateway/store/pg/). Types only: this
// file imports no backend, and the rooms import the store's types from it alone. A backend
// implements `Store` and its history reads `StoreReads`.
import type { RequestScope } from '../kernel/request-scope.js';
import type { ReadSnapshot } from './snapshot.js';
import type { HistoryRecord, Posting, Row, State, TableName } from './state.js';
import type { Pacer, Turns } from './turns.js';

export type { ReadSnapshot };

/** Whether a store can commit and serve now (`/readyz`); `reason` says why not. */
export type Readiness = { ready: true } | { ready: false; reason: string };

/** What a transaction function sees: the state to read, and the only ways to change it. */
export interface Tx {
  readonly state: State;
  readonly now: Date;
  get<T extends TableName>(name: T, id: string): Row<T> | undefined;
  set<T extends TableName>(name: T, id: string, value: Row<T>): void;
  del(name: TableName, id: string): void;
  post(posting: Posting): void;
  /**
   * The postings this transaction has made so far, from the `from`-th on (0: all): a payment
   * records what each of its steps posted, whatever ledger accounts those postings touched.
   */
  postingsSince(from: number): Posting[];
  /** How many postings this transaction has made so far (a mark for `postingsSince`). */
  readonly posting_count: number;
  history(record: HistoryRecord): void;
  setAdminTokenHash(hash: string | null): void;
  /**
   * Adds `n` to a counter row (a table whose rows are numbers: absent is 0, and 0 deletes
   * it). On PostgreSQL a delta, so that two transactions adding to one counter do not
   * conflict (the sum of an account's chat reservations).
   */
  add(name: TableName, id: string, n: number): void;
  /**
   * The money check: whether `ledger_account`'s balance, less the counters `less`, is at least
   * `micros` now. On PostgreSQL a yes is not a read of the exact balance but a condition the
   * commit checks on the current values (a guard), so that two debits of one wallet commit
   * both unless together they overdraw it; a no is an exact read. The ledger's debits ask this.
   */
  covers(
    ledger_account: string,
    micros: number,
    less?: ReadonlyArray<[TableName, string]>,
  ): boolean;
  /**
   * Registers the undo of a change this function makes outside the state (a room's
   * in-memory bookkeeping), run if the transaction is undone: when the function throws, and
   * with the PostgreSQL store when another gateway committed first and the function is run
   * again on the state with that commit (it may run several times; only the last run counts).
   */
  onUndo(undo: () => void): void;
}

/** An index of a table's rows by one string field (`indexBy`): read inside and outside transactions. */
export interface TableIndex<T extends TableName> {
  readonly field: string;
  /** The ids of the rows whose field is `key`, in the order they entered the index. */
  ids(key: string): ReadonlySet<string>;
  /** The rows whose field is `key`. */
  rows(key: string): Iterable<Row<T>>;
}

export interface IndexOptions {
  /**
   * Transaction functions read this index (`rows(key)` inside `transact`): on PostgreSQL a
   * commit then checks that the rows with that key are still the ones read (an index key's
   * version), so two transactions each adding a row under one key (a 51st API key) cannot
   * both commit. Reads outside transactions need no declaration.
   */
  in_transactions?: boolean;
}

/** A page of a table in creation order (`Store.page`). */
export interface PageOptions {
  newest_first?: boolean;
  offset: number;
  limit: number;
}

/** What the store counts about itself for /metrics, tests and the bench (null parts: not this backend). */
export interface StoreStats {
  /** Commit statements (write batches) sent and how they ended. */
  batches: number;
  conflicts: number;
  locked: number;
  /** Catch-ups with a shared log (#18 layout), or loads of rows into the cache (#30 layout). */
  syncs: number;
  /** Rows, balances and index keys read from the database into the cache. */
  rows_loaded?: number;
  /** Load statements. */
  loads?: number;
  /** Loads outside any transaction or read that made the event loop wait (the synchronous fallback). */
  blocking_loads?: number;
  /** Cache entries dropped because another gateway announced a change. */
  invalidations?: number;
  /** Records of other gateways applied to serve this one's requests (0 by design with #30). */
  foreign_records_applied?: number;
  /** Statements and round trips sent to the database, of every kind. */
  statements?: number;
  /** The same by what they are for (commit, load, read, history, claim, heartbeat...). */
  statements_by_kind?: Record<string, number>;
  /** Keys the commit statements locked (advisory locks), summed over statements. */
  keys_locked?: number;
  /** Entries in the cache now. */
  cache_entries?: number;
  /** Runs of transaction functions, each run counted (those put back to wait or load too). */
  runs?: number;
  /** Outages of the database seen, and requests refused for want of it (pg/outage.ts). */
  outages?: number;
  refused?: number;
  /** Commits whose answer was lost, by what the lookup of their id found. */
  in_doubt?: Record<string, number>;
}

/**
 * What only a fleet of gateways sharing one store means (PostgreSQL, gateway/store/pg/): who
 * else is live, claims of background work, keys agreed across gateways, the store's counters.
 * One process alone (the JSON-file store) answers all of it trivially, once, in
 * store/one-process.ts.
 */
export interface StoreFleet {
  /**
   * What a room's synchronous steps are about to read, loaded first (a request's key and
   * account before authentication, the rows a background pass works on): PostgreSQL runs `fn`
   * as a read (`read(fn)`: what the gateway's cache lacks is loaded without stopping the event
   * loop) and answers its result. The JSON-file store holds everything in memory: null, `fn`
   * not run (the caller reads at once, synchronously).
   */
  preload<T>(fn: (state: State) => T): Promise<T> | null;
  /**
   * Runs `fn` in a transaction, then `after` on the state as that commit left it (the balance
   * a chat settlement answers): the JSON-file store runs `after` at the end of the transaction
   * (one process: exactly what this commit left); PostgreSQL after the commit, on the cache as
   * the commit's answer updated it (a read of the balance inside would make debits of one
   * wallet on several gateways conflict, where they commute).
   */
  transactThenRead<T, R>(
    fn: (tx: Tx) => T,
    after: (state: State) => R,
    options?: TransactOptions,
  ): Promise<[T, R]>;
  /** Short-lived marks every transaction must see, kept as table `name` (see `Marks`). */
  marks<T extends TableName>(name: T): Marks<T>;
  /**
   * Builds what a room keeps so that the other gateways on this store see it or take it over
   * (chat's reservations as rows under leases, the work other gateways left to discover, the
   * transactions they may be submitting): PostgreSQL runs `make`; the JSON-file store, one
   * process whose memory every transaction sees and whose work nobody else does, answers null.
   */
  acrossGateways<T>(make: () => T): T | null;
  /** Whether this gateway runs the background work (status checks, webhooks, pruning). */
  isLeader(): boolean;
  /** The live gateways on this store, this one included. */
  liveGateways(): number;
  /**
   * Claims background work items for `lease_ms` (status checks, webhook deliveries, pruning):
   * the ids no other gateway holds (PostgreSQL: `FOR UPDATE SKIP LOCKED` on `claims`); all of
   * them with the JSON-file store (one process).
   */
  claim(kind: string, ids: readonly string[], lease_ms: number): Promise<string[]>;
  /** Gives claimed items back before their lease ends (the work is done). */
  release(kind: string, ids: readonly string[]): Promise<void>;
  /**
   * Works on one background item (a status check, a webhook delivery) that no other gateway
   * works on meanwhile. PostgreSQL: claims `item.id` under `item.kind` for `item.lease_ms`
   * (returning at once while another gateway holds it), reads the item again with `reread`
   * (another gateway may have worked it since `seen` was read; null: nothing to do now), runs
   * `work` on that and releases the claim. The JSON-file store (one process, nobody else to
   * work it) runs `work` on `seen` at once.
   */
  withClaim<R>(
    item: { kind: string; id: string; lease_ms: number },
    seen: R,
    reread: () => Promise<R | null>,
    work: (row: R) => Promise<void>,
  ): Promise<void>;
  /** Claims a signed request's signature until `until_ms` across the fleet: true when no claim of it is in force. */
  claimShared(key: string, until_ms: number, now_ms: number): Promise<boolean>;
  /**
   * The encryption-key check every gateway of one database agrees on: the one stored (put
   * first when none is; `replace`: put anyway); null without a database.
   */
  sharedKeyCheck(sealed: string, replace?: boolean): Promise<string | null>;
  /** The store's counters (null with the JSON-file store). */
  sharedStats(): StoreStats | null;
  /**
   * Runs periodic work that is no request's (discovering pending transactions and due
   * deliveries, pruning): on PostgreSQL its statements count as kind `background` in
   * `aihub_store_statements_total`, so that a request's statements can be told from them.
   */
  background<T>(fn: () => Promise<T>): Promise<T>;
}

/** How a transaction is committed. */
export interface TransactOptions {
  /**
   * false: on PostgreSQL the commit does not wait for its WAL flush (`synchronous_commit = off`
   * for a batch of only such commits): visible to every gateway at once, durable with the next
   * synchronous commit, or within the WAL writer's delay. Only for a write whose loss in a
   * crash of the database loses no money and no acknowledged write: a chat hold, which is a
   * lease (docs/ARCHITECTURE.md, "A billed request's one durable wait"). The JSON-file store
   * makes every commit durable.
   */
  durable?: boolean;
  /**
   * The request this transaction is part of, counted when it commits (kernel/request-scope.ts):
   * the lean lane passes its own; without it, the Express request in whose handling it runs.
   */
  scope?: RequestScope | undefined;
}

/**
 * What the rooms use of a store. Two backends: the JSON-file store (`FileStore`, a data dir)
 * and PostgreSQL (gateway/store/pg/, docs/store-postgres.md). The rooms' contract:
 * - changes only through `transact(fn)`: `fn` runs synchronously on the state and may run
 *   more than once (PostgreSQL), undoing what it changes outside the state with `tx.onUndo`;
 * - reads outside a transaction through `read(fn)`, `fetch`, `list`, `count`, `page`, `scan`
 *   and `reads` (history), which on PostgreSQL load what the gateway's cache lacks first;
 *   `state` and `get` outside them read the cache (a miss there waits for a load).
 */
export interface Store extends StoreFleet {
  readonly state: State;
  readonly reads: StoreReads;
  transact<T>(fn: (tx: Tx) => T, options?: TransactOptions): Promise<T>;
  read<T>(fn: (state: State) => T, options?: { fresh?: boolean }): Promise<T>;
  fetch<T extends TableName>(name: T, id: string): Promise<Row<T> | undefined>;
  list<T extends TableName>(
    name: T,
    field: keyof Row<T> & string,
    key: string,
  ): Promise<Array<Row<T>>>;
  count(name: TableName): Promise<number>;
  page<T extends TableName>(name: T, options: PageOptions): Promise<Array<Row<T>>>;
  scan(name: TableName, chunk?: number): AsyncGenerator<string[]>;
  /**
   * The ids of rows of `name` whose `field` (a number, or an ISO time as text) is below `value`,
   * lowest first, at most `limit`: leases past their end, deliveries due. On PostgreSQL an
   * index range (the fields the schema indexes: chat reservations' `lease_until_ms`, webhook
   * deliveries' `next_at`); on the JSON-file store a walk of the live table.
   */
  below(name: TableName, field: string, value: number | string, limit: number): Promise<string[]>;
  get<T extends TableName>(name: T, id: string): Row<T> | undefined;
  indexBy<T extends TableName>(
    name: T,
    field: keyof Row<T> & string,
    options?: IndexOptions,
  ): TableIndex<T>;
  readDurable(): Promise<void>;
  /**
   * Whether the store can commit and serve now (`/readyz`): not while its disk is full (JSON
   * files) or its database cannot be reached (PostgreSQL).
   */
  readiness(): Promise<Readiness>;
  close(): Promise<void>;
}

/**
 * Short-lived marks by key that every transaction must see (`Store.marks`; the payments'
 * duplicate window). The JSON-file store (one process: every transaction runs in it) keeps
 * them in memory, restored by the room from history at start; PostgreSQL keeps them as rows
 * of their table, read in the transaction (a mark another gateway committed meanwhile makes
 * the commit conflict and the function run again on it), deleted by the room's pruner.
 */
export interface Marks<T extends TableName> {
  /** In a transaction: the mark of `key`. */
  get(tx: Tx, key: string): Row<T> | undefined;
  /** In a transaction: sets the mark of `key` (undone with the transaction). */
  set(tx: Tx, key: string, mark: Row<T>): void;
  /**
   * The room's read of what its marks were before this start (`read`, from history), when
   * they live in memory; [] when they are rows, which outlive a restart (`read` not run).
   */
  restore<R>(read: () => Promise<R[]>): Promise<R[]>;
  /** A mark restored at start, outside a transaction (memory; rows keep themselves). */
  note(key: string, mark: Row<T>): void;
  /** Forgets the marks `expired` says are over (memory; rows are the room's pruner's). */
  sweep(expired: (mark: Row<T>) => boolean): void;
}

// History reads (`Store.reads`).

export type TxnRow = Row<'payment_txns'>;

/** The fields of a transaction the duplicate window compares: account, service, subject (the number, operator, biller...), amount, time. */
export type RecentTxn = Pick<
  TxnRow,
  'id' | 'account_id' | 'service' | 'subject' | 'amount_micros' | 'created_at'
>;

export interface TxnSelect {
  /** null: every account. */
  account_id: string | null;
  service?: string | undefined;
  status?: string | undefined;
  /** created_at bounds, ms, inclusive. */
  from_ms?: number | undefined;
  to_ms?: number | undefined;
  /** A further test on the row (number, id...): every candidate in range is then read. */
  match?: ((row: TxnRow) => boolean) | undefined;
  /** Read as of this snapshot (a CSV's count and its rows): see ReadSnapshot. */
  as_of?: ReadSnapshot | undefined;
}

export interface Page {
  offset: number;
  limit: number;
}

export interface WalletSelect {
  account_id: string | null;
  from_ms?: number | undefined;
  to_ms?: number | undefined;
  /** A further test on the posting (its transaction, service...): every posting in range is then read. */
  match?: ((posting: Posting) => boolean) | undefined;
  as_of?: ReadSnapshot | undefined;
}

export interface WalletLine {
  posting: Posting;
  /** For a hold's opening: the capture or void of that hold when the same commit resolved it. */
  resolved_by?: Posting;
  account_id: string;
  delta_micros: number;
  opening_micros: number;
  closing_micros: number;
}

export interface WalletResult {
  total: number;
  credits_micros: number;
  debits_micros: number;
  /** One account only: its balance before the first and after the last posting of the range. */
  opening_micros: number | null;
  closing_micros: number | null;
  rows: WalletLine[];
}

export interface LogSelect {
  account_id: string | null;
  from_ms?: number | undefined;
  to_ms?: number | undefined;
  /** `404` or a class `4xx`. */
  status?: string | undefined;
  method?: string | undefined;
  service?: string | undefined;
  match?: ((record: HistoryRecord) => boolean) | undefined;
  as_of?: ReadSnapshot | undefined;
}

export interface LogResult {
  total: number;
  errors: number;
  latency_total_ms: number;
  rows: HistoryRecord[];
}

export interface UsageSelect {
  account_id: string;
  from_ms?: number | undefined;
  to_ms?: number | undefined;
  /** A further test on the usage record (protocol, status...): every record in range is then read. */
  match?: ((record: HistoryRecord) => boolean) | undefined;
  as_of?: ReadSnapshot | undefined;
}

export interface KeyStats {
  requests: number;
  cost_micros: number;
  last_used: string | null;
}

export interface UsageResult {
  total: number;
  /** Over every matching record, from the index entries. */
  cost_micros: number;
  tokens: number;
  rows: HistoryRecord[];
}

export interface AuditSelect {
  account_id: string | null;
  action?: string | undefined;
}

export interface StoreReads {
  /** Payment transactions (pending and final), newest created first; `page` null: all of them. */
  txns(select: TxnSelect, page: Page | null): Promise<{ total: number; rows: TxnRow[] }>;
  /**
   * Every payment transaction matching `select`, in created order ('desc': newest first), a
   * chunk of rows at a time, the event loop running between chunks: a long report (a year of
   * every account) reads its rows in bounded memory without holding up other requests. Each
   * chunk is read in a turn of `pacer` (the caller's, which it ends; else one of its own).
   */
  txnChunks(select: TxnSelect, order: 'asc' | 'desc', pacer?: Pacer): AsyncGenerator<TxnRow[]>;
  /**
   * What the payment engine's duplicate window compares of the transactions finalized at or
   * after `since_ms`, oldest first: not whole transactions (a restart within the window after
   * a peak read 160,000 of them whole, 400 MB of heap; issue #36).
   */
  recentSince(since_ms: number): Promise<RecentTxn[]>;
  /** Wallet postings with the balance around each, oldest first; `page` null: all in range. */
  wallet(select: WalletSelect, page: Page | null, order: 'asc' | 'desc'): Promise<WalletResult>;
  /**
   * The same answer as `wallet`, its range walked a chunk of entries per turn of the event
   * loop (taking turns with every other long read, as `txnChunks` does): for reports, whose
   * range may be every account's whole history.
   */
  walletInTurns(
    select: WalletSelect,
    page: Page | null,
    order: 'asc' | 'desc',
    pacer?: Pacer,
  ): Promise<WalletResult>;
  /**
   * The rows of `walletInTurns`' page, in `order`, a batch at a time as the range is walked in
   * turns of `pacer` (a CSV download streams them; memory holds one batch): no totals.
   */
  walletLines(
    select: WalletSelect,
    page: Page,
    order: 'asc' | 'desc',
    pacer: Pacer,
  ): AsyncGenerator<WalletLine[]>;
  /**
   * Every wallet line in range, in `order`, a batch at a time as it is consumed, without turns
   * (the dashboard's export, which waits for its client between batches): one walk of the
   * range, not a walk per page.
   */
  walletExport(select: WalletSelect, order: 'asc' | 'desc'): AsyncGenerator<WalletLine[]>;
  /** API log records, by `order` of time; `page` null: all in range. */
  apiLogs(select: LogSelect, page: Page | null, order: 'asc' | 'desc'): Promise<LogResult>;
  /** The same answer as `apiLogs`, walked a chunk per turn (see `walletInTurns`). */
  apiLogsInTurns(
    select: LogSelect,
    page: Page | null,
    order: 'asc' | 'desc',
    pacer?: Pacer,
  ): Promise<LogResult>;
  /** The rows of `apiLogsInTurns`' page, a batch at a time (see `walletLines`). */
  apiLogRecords(
    select: LogSelect,
    page: Page,
    order: 'asc' | 'desc',
    pacer: Pacer,
  ): AsyncGenerator<HistoryRecord[]>;
  /**
   * One account's chat usage records (every protocol), by `order` of time; `page` null: all
   * in range. Walked a chunk per turn (see `walletInTurns`); totals folded as it goes.
   */
  usageInTurns(
    select: UsageSelect,
    page: Page | null,
    order: 'asc' | 'desc',
    pacer?: Pacer,
  ): Promise<UsageResult>;
  /** The rows of `usageInTurns`' page, a batch at a time in turns of `pacer` (see `walletLines`). */
  usageRecords(
    select: UsageSelect,
    page: Page,
    order: 'asc' | 'desc',
    pacer: Pacer,
  ): AsyncGenerator<HistoryRecord[]>;
  /** Audit records, newest first. */
  audit(select: AuditSelect, page: Page): Promise<{ total: number; rows: HistoryRecord[] }>;
  /** Chat spend per tier for each UTC day from `first_day_ms`, `days` of them. */
  dailySpend(
    account_id: string,
    first_day_ms: number,
    days: number,
  ): Promise<Array<Map<string, number>>>;
  keyStats(key_id: string): Promise<KeyStats>;
  /**
   * The gateway-wide turns of the long reads (`txnChunks`, the `InTurns` reads): their
   * budget is set from the reports' config; work done for a report outside them (sending its
   * answer) is charged to them too.
   */
  readonly turns: Turns;
  /** A point in history for reads that must agree (see ReadSnapshot). */
  snapshot(): ReadSnapshot;
}
