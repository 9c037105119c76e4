// The current-state document (the lowdb checkpoint) and the operations that change it.
// Every change is an Op; the same `applyOp` runs for a live commit and for journal replay,
// so a replayed store is the live store by construction.
import { assertMicros } from '../util/money.js';

/**
 * What an account may use: the AI API (`ai`) and each payment service by its code (the
 * payments room's list, payments/services.ts); a payment service it does not name is off.
 */
export type AccountServices = { ai: boolean } & Partial<Record<string, boolean>>;
export type KycStatus = 'none' | 'submitted' | 'approved' | 'rejected';

export interface Account {
  id: string;
  email: string;
  name: string;
  status: 'active' | 'disabled';
  services: AccountServices;
  kyc_status: KycStatus;
  ip_whitelist: string[];
  password_hash: string | null;
  /** The secret is sealed (AES-256-GCM, util/sealed.ts); plaintext only in records from before encryption. */
  webhook: { url: string; secret: string } | null;
  /** Signed /api requests (payments/signing.ts): on when present; the secret is sealed. Absent in older records. */
  signing?: {
    secret: string;
    created_at: string;
    /** Made since the v2 scheme exists: v1 signatures (timestamp + body only) are never accepted. */
    v2_only?: boolean;
  } | null;
  created_at: string;
}

export interface ApiKey {
  /** `key_` + the first 24 hex digits of the key's SHA-256: found from the key in O(1). */
  id: string;
  account_id: string;
  hash: string;
  prefix: string;
  name: string;
  created_at: string;
  revoked_at: string | null;
}

export interface Hold {
  id: string;
  account_id: string;
  amount_micros: number;
  purpose: string;
  ref: string | null;
  created_at: string;
}

/**
 * The record of one idempotent operation (table `idempotency`, id `<operation>:<scope>:<key>`):
 * `status` IDEMPOTENCY_IN_FLIGHT while its request is being answered, then the status of the
 * first answer, which `body` holds. A record with its answer is final: it leaves the live
 * document for history in the commit that records the answer (ARCHIVED_TABLES), and
 * `tx.get('idempotency', id)` still finds it there, whatever its age.
 */
export interface IdempotencyRecord {
  key: string;
  /** A hash of what the request asked: the same key with another request is a conflict. */
  request_hash: string;
  status: number;
  body: unknown;
  created_at: string;
}

/** The status of an idempotency record whose request is still being answered (it stays live). */
export const IDEMPOTENCY_IN_FLIGHT = 0;

export interface UsageTotals {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost_micros: number;
  /** Of prompt_tokens, read from an upstream's cache (absent in totals written before it was counted). */
  cached_tokens?: number;
  /** Of completion_tokens, spent on reasoning. */
  reasoning_tokens?: number;
  /** The same figures per wire protocol (chat, responses, messages, embeddings, completions); absent before it was counted. */
  by_protocol?: Record<string, ProtocolUsage>;
}

export interface ProtocolUsage {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  cost_micros: number;
}

/**
 * The keyed tables of the document. Other rooms add their tables by declaration merging:
 * `declare module '../store/state.js' { interface Tables { transactions: Record<string, Txn> } }`.
 */
export interface Tables {
  accounts: Record<string, Account>;
  /** email (lower-cased) → account id */
  emails: Record<string, string>;
  keys: Record<string, ApiKey>;
  holds: Record<string, Hold>;
  idempotency: Record<string, IdempotencyRecord>;
  usage: Record<string, UsageTotals>;
}
export type TableName = keyof Tables;
export type Row<T extends TableName> = Tables[T][string];

export interface State {
  format: 'aihub-state';
  /** 2: a JSON-lines checkpoint (state.jsonl) without finalized history; 1: the one-document state.json before it. */
  version: 1 | 2;
  /** The sequence number of the last journal record applied. */
  seq: number;
  meta: { admin_token_hash: string | null; created_at: string };
  /** Ledger account → balance in micro-units. Sums to zero. */
  balances: Record<string, number>;
  tables: Partial<Tables>;
}

export function emptyState(created_at: string): State {
  return {
    format: 'aihub-state',
    version: 2,
    seq: 0,
    meta: { admin_token_hash: null, created_at },
    balances: {},
    tables: {},
  };
}

/**
 * A table: an object without a prototype, so that no id (`constructor`, `__proto__`,
 * `toString`...) can reach Object.prototype through it (issue #13, finding 5). Rows are read
 * with `rowOf`, an own-property lookup, for tables loaded before they had no prototype.
 */
export function table<T extends TableName>(state: State, name: T): Tables[T] {
  return (state.tables[name] ??= Object.create(null) as Tables[T]) as Tables[T];
}

/** The row `id` of a table, if the table has it as its own: never something inherited. */
export function rowOf<R>(rows: Record<string, R>, id: string): R | undefined {
  return Object.hasOwn(rows, id) ? rows[id] : undefined;
}

/** Gives every table of a document read from disk (JSON.parse: ordinary objects) no prototype. */
export function detachPrototypes(state: State): void {
  for (const rows of Object.values(state.tables)) if (rows) Object.setPrototypeOf(rows, null);
}

/** A double-entry posting: entries sum to zero; `hold` marks a hold's lifecycle step. */
export interface Posting {
  id: string;
  ts: string;
  memo: string;
  account_id: string | null;
  entries: Array<[ledger_account: string, amount_micros: number]>;
  hold?: { id: string; action: 'open' | 'capture' | 'void' };
  ref?: string;
  /** What the posting's amounts came from (a commission's slab, a GST split's rate and place of supply). */
  meta?: Record<string, string | number>;
}

export interface HistoryRecord {
  type: string;
  ts: string;
  [field: string]: unknown;
}

export type Op =
  | { o: 'set'; t: TableName; id: string; v: unknown }
  | { o: 'del'; t: TableName; id: string }
  | { o: 'post'; p: Posting }
  | { o: 'hist'; r: HistoryRecord }
  | { o: 'meta'; k: 'admin_token_hash'; v: string | null }
  /** Adds `n` to a counter row (a number; absent is 0, and 0 deletes it): see Tx.add. */
  | { o: 'add'; t: TableName; id: string; n: number };

/** One line of the journal: one committed transaction. */
export interface JournalRecord {
  s: number;
  t: string;
  ops: Op[];
}

export class InvariantError extends Error {
  override name = 'InvariantError';
}

/** Ledger accounts that belong to a customer and may never go below zero. */
export function isCustomerLedgerAccount(ledger_account: string): boolean {
  return ledger_account.startsWith('wallet:') || ledger_account.startsWith('hold:');
}

/** Applies one op in place and returns its undo. Throws InvariantError, leaving the state unchanged. */
export function applyOp(state: State, op: Op): () => void {
  switch (op.o) {
    case 'set': {
      const rows = table(state, op.t) as Record<string, unknown>;
      const had = Object.hasOwn(rows, op.id);
      const previous = rows[op.id];
      // A row that became final leaves the live document for history (the journal line
      // holding this op, found through the indexes: see archive.ts); any other row is a
      // defined own property, never an inherited setter (`__proto__` on a plain object).
      if (isArchivedRow(op.t, op.v)) delete rows[op.id];
      else
        Object.defineProperty(rows, op.id, {
          value: op.v,
          writable: true,
          enumerable: true,
          configurable: true,
        });
      return () => {
        if (had) rows[op.id] = previous;
        else delete rows[op.id];
      };
    }
    case 'del': {
      const rows = table(state, op.t) as Record<string, unknown>;
      if (!Object.hasOwn(rows, op.id)) return () => {};
      const previous = rows[op.id];
      delete rows[op.id];
      return () => {
        Object.defineProperty(rows, op.id, {
          value: previous,
          writable: true,
          enumerable: true,
          configurable: true,
        });
      };
    }
    case 'post':
      return applyPosting(state, op.p);
    case 'hist':
      return applyHistory(state, op.r);
    case 'add': {
      assertMicros(op.n);
      const rows = table(state, op.t) as Record<string, unknown>;
      const had = Object.hasOwn(rows, op.id);
      const previous = rows[op.id];
      const next = (typeof previous === 'number' ? previous : 0) + op.n;
      if (next === 0) delete rows[op.id];
      else
        Object.defineProperty(rows, op.id, {
          value: next,
          writable: true,
          enumerable: true,
          configurable: true,
        });
      return () => {
        if (had)
          Object.defineProperty(rows, op.id, {
            value: previous,
            writable: true,
            enumerable: true,
            configurable: true,
          });
        else delete rows[op.id];
      };
    }
    case 'meta': {
      const previous = state.meta[op.k];
      state.meta[op.k] = op.v;
      return () => {
        state.meta[op.k] = previous;
      };
    }
  }
}

function applyPosting(state: State, posting: Posting): () => void {
  let sum = 0;
  for (const [ledger_account, amount_micros] of posting.entries) {
    assertMicros(amount_micros);
    sum += amount_micros;
    const after = (state.balances[ledger_account] ?? 0) + amount_micros;
    if (after < 0 && isCustomerLedgerAccount(ledger_account)) {
      throw new InvariantError(`posting ${posting.id} would take ${ledger_account} below zero`);
    }
  }
  if (sum !== 0)
    throw new InvariantError(`posting ${posting.id} does not balance: entries sum to ${sum}`);
  for (const [ledger_account, amount_micros] of posting.entries) {
    state.balances[ledger_account] = (state.balances[ledger_account] ?? 0) + amount_micros;
  }
  return () => {
    for (const [ledger_account, amount_micros] of posting.entries) {
      state.balances[ledger_account] = (state.balances[ledger_account] ?? 0) - amount_micros;
    }
  };
}

/**
 * Tables that ops other than set/del change (a usage record adds to `usage`). Replaying a
 * set or del twice leaves the same row; adding twice does not. A checkpoint therefore takes
 * these, like `balances`, whole at its sequence number (see Store.checkpoint).
 */
export const AGGREGATE_TABLES: ReadonlySet<string> = new Set<TableName>(['usage']);

function applyHistory(state: State, record: HistoryRecord): () => void {
  if (record.type !== 'usage' || typeof record.account_id !== 'string') return () => {};
  const usage = table(state, 'usage');
  const previous = rowOf(usage, record.account_id);
  const base = previous ?? { requests: 0, prompt_tokens: 0, completion_tokens: 0, cost_micros: 0 };
  usage[record.account_id] = {
    requests: base.requests + 1,
    prompt_tokens: base.prompt_tokens + numberField(record, 'prompt_tokens'),
    completion_tokens: base.completion_tokens + numberField(record, 'completion_tokens'),
    cost_micros: base.cost_micros + numberField(record, 'cost_micros'),
  };
  const cached_tokens = (base.cached_tokens ?? 0) + numberField(record, 'cached_tokens');
  const reasoning_tokens = (base.reasoning_tokens ?? 0) + numberField(record, 'reasoning_tokens');
  if (cached_tokens) usage[record.account_id]!.cached_tokens = cached_tokens;
  if (reasoning_tokens) usage[record.account_id]!.reasoning_tokens = reasoning_tokens;
  // Per protocol: a new object each time (the undo keeps `previous` as it was). The name is
  // the gateway's own (a usage record is written by the chat room), checked all the same.
  const protocol =
    typeof record.protocol === 'string' && /^[a-z_]{1,20}$/.test(record.protocol)
      ? record.protocol
      : 'chat';
  const by_protocol: Record<string, ProtocolUsage> = Object.assign(
    Object.create(null) as Record<string, ProtocolUsage>,
    base.by_protocol,
  );
  const was = rowOf(by_protocol, protocol) ?? {
    requests: 0,
    prompt_tokens: 0,
    completion_tokens: 0,
    cached_tokens: 0,
    reasoning_tokens: 0,
    cost_micros: 0,
  };
  by_protocol[protocol] = {
    requests: was.requests + 1,
    prompt_tokens: was.prompt_tokens + numberField(record, 'prompt_tokens'),
    completion_tokens: was.completion_tokens + numberField(record, 'completion_tokens'),
    cached_tokens: was.cached_tokens + numberField(record, 'cached_tokens'),
    reasoning_tokens: was.reasoning_tokens + numberField(record, 'reasoning_tokens'),
    cost_micros: was.cost_micros + numberField(record, 'cost_micros'),
  };
  usage[record.account_id]!.by_protocol = by_protocol;
  const account_id = record.account_id;
  return () => {
    if (previous) usage[account_id] = previous;
    else delete usage[account_id];
  };
}

function numberField(record: HistoryRecord, field: string): number {
  const value = record[field];
  return typeof value === 'number' && Number.isSafeInteger(value) ? value : 0;
}

/**
 * Tables whose rows leave the live document once final, for history, each with the test of
 * a final row. A final row never changes again, so it lives only in the journal line that
 * made it final, found by id through the id runs (archive.ts, id-runs.ts):
 * - `payment_txns` with `stage: "final"` (a reversal is a new posting, never an edit);
 * - `idempotency` once its answer is recorded (`status` not IDEMPOTENCY_IN_FLIGHT): every
 *   idempotent operation's record (the payment engine's keys, the admin's credit and debit
 *   references, the dashboard's top-up nonces), so that keys do not grow the document;
 * - `dmt_transfers` and `dmt_transfer_keys` (payments/dmt/tables.ts): a split transfer and
 *   its Idempotency-Key are written once, in the commit that opens the legs, and never change
 *   (the split transfer's status is read from its legs), so they are final at once.
 * A later `set` of the same id (a key past its window, used afresh) makes a newer version;
 * lookups find the newest. A `del` does not reach history: it removes a live row only.
 */
const FINAL_ROW: ReadonlyMap<string, (row: Record<string, unknown>) => boolean> = new Map([
  ['payment_txns', (row: Record<string, unknown>) => row.stage === 'final'],
  [
    'idempotency',
    (row: Record<string, unknown>) =>
      typeof row.status === 'number' && row.status !== IDEMPOTENCY_IN_FLIGHT,
  ],
  ['dmt_transfers', () => true],
  ['dmt_transfer_keys', () => true],
  // A month's GST documents of an account (payments/invoices): issued once, never changed.
  ['gst_invoices', () => true],
]);

export const ARCHIVED_TABLES: ReadonlySet<string> = new Set(FINAL_ROW.keys());

export function isArchivedRow(table: string, row: unknown): boolean {
  const final = FINAL_ROW.get(table);
  return (
    final !== undefined &&
    typeof row === 'object' &&
    row !== null &&
    final(row as Record<string, unknown>)
  );
}
