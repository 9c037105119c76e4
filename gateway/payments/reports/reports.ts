// Reports: transactions of every service, commissions, wallet history and API logs, for one
// account or (admins) across accounts. These functions are the single source of the rows:
// GET /api/reports/*, GET /admin/reports/* and the wallet history call them, and CSV is the
// same rows as the JSON. Each report is two functions over one selection: its totals and page
// (`report<Name>`), and its rows alone, streamed a batch at a time (`<name>Rows`, for CSV
// downloads: memory holds a batch, never the download). Long reads run in turns of a pacer
// (store/turns.ts), which stops them when the report's client goes away. Every report reads through the store's read interface
// (`store.reads`): the rows in its date range, found through the history indexes, never a
// pass over the whole history.
import { ledgerOf } from '../engine/ledger-effect.js';
import type {
  LogSelect,
  Page,
  ReadSnapshot,
  Store,
  UsageSelect,
  WalletLine,
  WalletSelect,
} from '../../store/types.js';
import type { HistoryRecord } from '../../store/state.js';
import type { Pacer } from '../../store/turns.js';
import type { PaymentService } from '../../providers/types.js';
import { microsToUnits } from '../../util/money.js';
import { transactionChunks, type TransactionFilter } from '../engine/txn-filter.js';
import type { PaymentTxn } from '../engine/tables.js';
import { loggableUrl } from '../engine/webhooks.js';
import { TDS_ACCOUNT } from '../engine/settle.js';
import { ledgerMovements, postingFigures } from '../engine/ledger-lines.js';
import type { Row } from '../shared/csv.js';

/** The ledger accounts of commissions and overrides, and of their TDS. */
const isEarningAccount = (account: string) =>
  account.startsWith('commission:') || account.startsWith('override:') || account === TDS_ACCOUNT;

export const REPORTS = ['transactions', 'commissions', 'wallet', 'api-logs', 'ai-usage'] as const;
export type ReportName = (typeof REPORTS)[number];

export interface Paging {
  page: number;
  limit: number;
  order: 'asc' | 'desc';
}

export interface ReportResult {
  report: ReportName;
  /** The column order of `rows` (and of the CSV header). */
  columns: string[];
  total: number;
  page: number;
  limit: number;
  /** Over every row that matches the filters, not only this page. */
  totals: Record<string, unknown>;
  rows: Row[];
}

/**
 * `account_id` null: every account (admins). Admin reports name each row's account. `as_of`:
 * read as of that snapshot (a CSV's count and rows agree on one point; see ReadSnapshot).
 */
export type Scope = { account_id: string | null; admin?: boolean; as_of?: ReadSnapshot };

const showAccount = (scope: Scope) => scope.admin === true || scope.account_id === null;

/** What a transaction was, in a few words (operator, transfer, biller, lookup). */
export function describeTxn(txn: PaymentTxn): string {
  const d = txn.details;
  switch (d.kind) {
    case 'transfer':
      return `${String(d.txn_type)} to ${String(d.beneficiary_name)}`;
    case 'beneficiary_verification':
      return `penny drop for ${String(d.beneficiary_name)}`;
    case 'pan_lookup':
      return `PAN lookup (${String(d.pan_type)})`;
    case 'bill_payment':
      return String(d.biller);
    default:
      return d.operator !== undefined ? String(d.operator) : txn.service;
  }
}

function reference(txn: PaymentTxn): string | null {
  const r = txn.result;
  const value = r.utr ?? r.operator_ref ?? r.biller_ref ?? txn.provider_ref;
  return value === undefined || value === null ? null : String(value);
}

const TXN_COLUMNS = [
  'txn_id',
  'created_at',
  'finalized_at',
  'service',
  'kind',
  'description',
  'status',
  'number',
  'mobile',
  'amount',
  'charges',
  'commission',
  'reference',
  'provider',
  'message',
];

function txnRow(txn: PaymentTxn, with_account: boolean): Row {
  return {
    ...(with_account ? { account_id: txn.account_id } : {}),
    txn_id: txn.id,
    created_at: txn.created_at,
    finalized_at: txn.finalized_at,
    service: txn.service,
    kind: String(txn.details.kind ?? txn.service),
    description: describeTxn(txn),
    status: txn.status,
    number: txn.subject,
    mobile: txn.details.mobile !== undefined ? String(txn.details.mobile) : null,
    amount: microsToUnits(txn.amount_micros),
    charges: microsToUnits(txn.charges_micros),
    commission: txn.status === 'success' ? microsToUnits(txn.commission_micros) : 0,
    reference: txn.status === 'success' ? reference(txn) : null,
    provider: txn.provider,
    message: txn.message,
  };
}

/** A report's page: the rows at positions [offset, offset + limit) of what is streamed through it. */
class PageTaker<T> {
  private position = 0;
  readonly rows: T[] = [];
  private readonly start: number;
  constructor(private readonly paging: Paging) {
    this.start = (paging.page - 1) * paging.limit;
  }
  offer(row: T): void {
    if (this.position >= this.start && this.rows.length < this.paging.limit) this.rows.push(row);
    this.position++;
  }
}

/** The page's rows of batches streamed in report order: skips its offset, stops at its limit. */
async function* pageOfBatches<T>(source: AsyncIterable<T[]>, paging: Paging): AsyncGenerator<T[]> {
  let skip = (paging.page - 1) * paging.limit;
  let left = paging.limit;
  for await (const batch of source) {
    const from = Math.min(skip, batch.length);
    skip -= from;
    const rows = batch.slice(from, from + left);
    left -= rows.length;
    if (rows.length > 0) yield rows;
    if (left === 0) return;
  }
}

const pageOf = (paging: Paging): Page => ({
  offset: (paging.page - 1) * paging.limit,
  limit: paging.limit,
});

/**
 * The transactions report: its totals and its page from one pass over the matching
 * transactions, a chunk at a time (see transactionChunks): memory holds the totals and the
 * page, never the range.
 * The ledger effect is what the successful transactions moved, per ledger account: the amount
 * to its `pay_to`, charges to revenue:<service>, commission from commission:<service>. Equal
 * to the ledger's balances of those accounts when the report covers everything.
 */
export async function reportTransactions(
  store: Store,
  filter: TransactionFilter,
  paging: Paging,
  scope: Scope,
  pacer?: Pacer,
): Promise<ReportResult> {
  const page = new PageTaker<PaymentTxn>(paging);
  const totals = new TxnTotals();
  for await (const chunk of transactionChunks(store, filter, scope, paging.order, pacer)) {
    for (const txn of chunk) {
      page.offer(txn);
      totals.add(txn);
    }
  }
  return {
    report: 'transactions',
    columns: txnColumns(scope),
    total: totals.count,
    page: paging.page,
    limit: paging.limit,
    totals: totals.result(),
    rows: page.rows.map((t) => txnRow(t, showAccount(scope))),
  };
}

const txnColumns = (scope: Scope) => [
  ...(showAccount(scope) ? ['account_id'] : []),
  ...TXN_COLUMNS,
];

/** The transactions report's rows alone, streamed a batch at a time. */
export async function* transactionRows(
  store: Store,
  filter: TransactionFilter,
  paging: Paging,
  scope: Scope,
  pacer: Pacer,
): AsyncGenerator<Row[]> {
  const chunks = transactionChunks(store, filter, scope, paging.order, pacer);
  for await (const txns of pageOfBatches(chunks, paging))
    yield txns.map((t) => txnRow(t, showAccount(scope)));
}

/** A customer's own ledger accounts (its wallet, its holds, what it owes): not the platform's. */
const CUSTOMER_ACCOUNT = /^(wallet|hold|receivable):/;

/**
 * What a transaction moved, per ledger account other than the customers' own (their wallets,
 * holds and debts): the sum of every posting it made (engine/ledger-effect.ts; for rows from
 * before that was kept, what the engine then posted): the amount to its `pay_to`, the charges
 * to revenue (each fee's GST to its own accounts), the commission and the override from their
 * expense accounts with their TDS to tds:194h; a reversed one nets to nothing.
 */
export function txnLedgerEffect(txn: PaymentTxn): Array<[string, number]> {
  const net = new Map<string, number>();
  for (const [, account, micros] of ledgerOf(txn))
    if (!CUSTOMER_ACCOUNT.test(account)) net.set(account, (net.get(account) ?? 0) + micros);
  return [...net].filter(([, micros]) => micros !== 0);
}

/** The transactions report's totals, folded one transaction at a time. */
class TxnTotals {
  count = 0;
  private readonly by_status: Record<PaymentTxn['status'], number> = {
    success: 0,
    pending: 0,
    failed: 0,
    on_hold: 0,
    refund_pending: 0,
    refunded: 0,
    reversed: 0,
  };
  private readonly success = { amount: 0, charges: 0, commission: 0, tds: 0 };
  private held = 0;
  private refunded = 0;
  private readonly by_service: Record<
    string,
    { count: number; success: number; amount: number; charges: number; commission: number }
  > = {};
  private readonly ledger = new Map<string, number>();

  add(txn: PaymentTxn): void {
    this.count++;
    this.by_status[txn.status]++;
    const service = (this.by_service[txn.service] ??= {
      count: 0,
      success: 0,
      amount: 0,
      charges: 0,
      commission: 0,
    });
    service.count++;
    // What the transaction moved for the platform (not the customers' own accounts): a
    // reversed one nets to nothing, a success what its postings moved, whatever accounts.
    for (const [account, micros] of txnLedgerEffect(txn)) this.post(account, micros);
    if (txn.stage !== 'final') this.held += txn.amount_micros + txn.charges_micros;
    else if (txn.status !== 'success') this.refunded += txn.refund?.amount_micros ?? 0;
    else {
      this.success.amount += txn.amount_micros;
      this.success.charges += txn.charges_micros;
      this.success.commission += txn.commission_micros;
      this.success.tds += txn.earning?.tds_micros ?? 0;
      service.success++;
      service.amount += txn.amount_micros;
      service.charges += txn.charges_micros;
      service.commission += txn.commission_micros;
    }
  }

  private post(account: string, amount: number): void {
    const total = (this.ledger.get(account) ?? 0) + amount;
    if (total === 0) this.ledger.delete(account);
    else this.ledger.set(account, total);
  }

  result(): Record<string, unknown> {
    for (const entry of Object.values(this.by_service)) {
      for (const field of ['amount', 'charges', 'commission'] as const)
        entry[field] = microsToUnits(entry[field]);
    }
    return {
      count: this.count,
      by_status: this.by_status,
      success: {
        amount: microsToUnits(this.success.amount),
        charges: microsToUnits(this.success.charges),
        commission: microsToUnits(this.success.commission),
        tds: microsToUnits(this.success.tds),
      },
      held: microsToUnits(this.held),
      refunded: microsToUnits(this.refunded),
      by_service: this.by_service,
      ledger: Object.fromEntries(
        [...this.ledger]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([account, amount]) => [account, microsToUnits(amount)]),
      ),
    };
  }
}

const COMMISSION_COLUMNS = [
  'txn_id',
  'created_at',
  'service',
  'description',
  'number',
  'amount',
  'commission',
  'posting_id',
];

/** The transactions that earned a commission, a chunk at a time. */
async function* commissionChunks(
  store: Store,
  filter: TransactionFilter,
  scope: Scope,
  order: 'asc' | 'desc',
  pacer: Pacer | undefined,
): AsyncGenerator<PaymentTxn[]> {
  const success = { ...filter, status: 'success' as const };
  for await (const chunk of transactionChunks(store, success, scope, order, pacer))
    yield chunk.filter((txn) => txn.commission_micros > 0);
}

export async function reportCommissions(
  store: Store,
  filter: TransactionFilter,
  paging: Paging,
  scope: Scope,
  pacer?: Pacer,
): Promise<ReportResult> {
  const page = new PageTaker<PaymentTxn>(paging);
  let count = 0;
  let amount = 0;
  let commission = 0;
  for await (const chunk of commissionChunks(store, filter, scope, paging.order, pacer)) {
    for (const txn of chunk) {
      count++;
      amount += txn.amount_micros;
      commission += txn.commission_micros;
      page.offer(txn);
    }
  }
  return {
    report: 'commissions',
    columns: [...(showAccount(scope) ? ['account_id'] : []), ...COMMISSION_COLUMNS],
    total: count,
    page: paging.page,
    limit: paging.limit,
    totals: {
      count,
      amount: microsToUnits(amount),
      commission: microsToUnits(commission),
      ...(await creditedInRange(store, filter, scope, pacer)),
    },
    rows: page.rows.map((t) => commissionRow(t, scope)),
  };
}

/**
 * What the scope's postings dated in the range moved as commissions and overrides (gross,
 * TDS, net; a reversal's negative), whichever transaction they belong to: the statements'
 * figures for those dates (engine/ledger-lines.ts), where the rows above are the
 * transactions created in the range that are still successes. Only the service filter
 * applies (a number or transaction id selects transactions, not postings: then absent).
 */
async function creditedInRange(
  store: Store,
  filter: TransactionFilter,
  scope: Scope,
  pacer: Pacer | undefined,
): Promise<{ credited?: { gross: number; tds: number; net: number } }> {
  if (filter.number !== undefined || filter.txn_id !== undefined) return {};
  const own = pacer ?? store.reads.turns.pacer();
  let moved: Map<string, number>;
  try {
    moved = await ledgerMovements(
      store,
      {
        account_id: scope.account_id,
        from_ms: filter.from,
        to_ms: filter.to,
        wanted: isEarningAccount,
        ...(filter.service === undefined
          ? {}
          : { postings: (p) => postingFigures(p).earning_service === filter.service }),
        as_of: scope.as_of,
      },
      own,
    );
  } finally {
    if (!pacer) own.end();
  }
  const sums = { gross: 0, tds: 0 };
  for (const [account, micros] of moved)
    if (account === TDS_ACCOUNT) sums.tds += micros;
    else sums.gross -= micros;
  return {
    credited: {
      gross: microsToUnits(sums.gross),
      tds: microsToUnits(sums.tds),
      net: microsToUnits(sums.gross - sums.tds),
    },
  };
}

function commissionRow(t: PaymentTxn, scope: Scope): Row {
  return {
    ...(showAccount(scope) ? { account_id: t.account_id } : {}),
    txn_id: t.id,
    created_at: t.created_at,
    service: t.service,
    description: describeTxn(t),
    number: t.subject,
    amount: microsToUnits(t.amount_micros),
    commission: microsToUnits(t.commission_micros),
    posting_id: t.postings.commission ?? null,
  };
}

/** The commissions report's rows alone, streamed a batch at a time. */
export async function* commissionRows(
  store: Store,
  filter: TransactionFilter,
  paging: Paging,
  scope: Scope,
  pacer: Pacer,
): AsyncGenerator<Row[]> {
  const chunks = commissionChunks(store, filter, scope, paging.order, pacer);
  for await (const txns of pageOfBatches(chunks, paging))
    yield txns.map((t) => commissionRow(t, scope));
}

/** What a wallet posting was, from its hold step and memo. */
export function postingKind(
  hold_action: string | undefined,
  amount_micros: number,
  memo: string,
): string {
  if (hold_action === 'open') return 'hold';
  if (hold_action === 'void') return 'refund';
  if (hold_action === 'capture') return 'release';
  if (memo.includes('commission')) return 'commission';
  if (memo.includes('charges')) return 'charges';
  return amount_micros > 0 ? 'credit' : 'debit';
}

export interface WalletFilter {
  from?: number | undefined;
  to?: number | undefined;
  txn_id?: string | undefined;
  service?: PaymentService | undefined;
  number?: string | undefined;
}

const WALLET_COLUMNS = [
  'posting_id',
  'at',
  'kind',
  'memo',
  'ref',
  'service',
  'amount',
  'opening_balance',
  'closing_balance',
];

/**
 * Every wallet posting with the balance before and after it (per account), oldest first in
 * the journal, filtered; `opening_balance`/`closing_balance` of the period for one account.
 */
export async function reportWallet(
  store: Store,
  filter: WalletFilter,
  paging: Paging,
  scope: Scope,
  pacer?: Pacer,
): Promise<ReportResult & { opening_micros: number | null; closing_micros: number | null }> {
  await store.readDurable();
  const result = await store.reads.walletInTurns(
    walletSelect(store, filter, scope),
    pageOf(paging),
    paging.order,
    pacer,
  );
  // The page's transactions (for each line's service) read together: on PostgreSQL those
  // the cache lacks are loaded in one statement, without stopping the event loop.
  const rows = await store.read(() => result.rows.map((line) => walletRow(store, line, scope)));
  const single = scope.account_id !== null;
  return {
    report: 'wallet',
    columns: walletColumns(scope),
    total: result.total,
    page: paging.page,
    limit: paging.limit,
    totals: {
      count: result.total,
      credits: microsToUnits(result.credits_micros),
      debits: microsToUnits(result.debits_micros),
      net: microsToUnits(result.credits_micros - result.debits_micros),
      ...(single
        ? {
            opening_balance: microsToUnits(result.opening_micros!),
            closing_balance: microsToUnits(result.closing_micros!),
          }
        : {}),
    },
    rows,
    opening_micros: result.opening_micros,
    closing_micros: result.closing_micros,
  };
}

/** The wallet report's rows alone, streamed a batch at a time. */
export async function* walletRows(
  store: Store,
  filter: WalletFilter,
  paging: Paging,
  scope: Scope,
  pacer: Pacer,
): AsyncGenerator<Row[]> {
  await store.readDurable();
  const select = walletSelect(store, filter, scope);
  for await (const lines of store.reads.walletLines(select, pageOf(paging), paging.order, pacer))
    yield await store.read(() => lines.map((line) => walletRow(store, line, scope)));
}

const walletColumns = (scope: Scope) => [
  ...(showAccount(scope) ? ['account_id'] : []),
  ...WALLET_COLUMNS,
];

const txnOf = (store: Store, ref: string | undefined) =>
  ref ? store.get('payment_txns', ref) : undefined;

function walletRow(store: Store, line: WalletLine, scope: Scope): Row {
  return {
    ...(showAccount(scope) ? { account_id: line.account_id } : {}),
    posting_id: line.posting.id,
    at: line.posting.ts,
    kind: postingKind(line.posting.hold?.action, line.delta_micros, line.posting.memo),
    memo: line.posting.memo,
    ref: line.posting.ref ?? null,
    service: txnOf(store, line.posting.ref)?.service ?? null,
    amount: microsToUnits(line.delta_micros),
    opening_balance: microsToUnits(line.opening_micros),
    closing_balance: microsToUnits(line.closing_micros),
  };
}

/** The wallet postings a wallet report selects (a transaction, service or number filter reads each posting's transaction). */
function walletSelect(store: Store, filter: WalletFilter, scope: Scope): WalletSelect {
  const filtered =
    filter.txn_id !== undefined || filter.service !== undefined || filter.number !== undefined;
  const match = filtered
    ? (posting: { ref?: string }) => {
        if (filter.txn_id && posting.ref !== filter.txn_id) return false;
        if (!filter.service && !filter.number) return true;
        const txn = txnOf(store, posting.ref);
        if (filter.service && txn?.service !== filter.service) return false;
        if (
          filter.number &&
          txn?.subject !== filter.number &&
          txn?.details.mobile !== filter.number
        )
          return false;
        return true;
      }
    : undefined;
  return {
    account_id: scope.account_id,
    from_ms: filter.from,
    to_ms: filter.to,
    match,
    as_of: scope.as_of,
  };
}

export interface ApiLogFilter {
  from?: number | undefined;
  to?: number | undefined;
  txn_id?: string | undefined;
  service?: PaymentService | undefined;
  /** `404`, or a class: `2xx`, `4xx`, `5xx`. */
  status?: string | undefined;
  method?: string | undefined;
}

const API_LOG_COLUMNS = [
  'ts',
  'direction',
  'method',
  'path',
  'status',
  'latency_ms',
  'ip',
  'key_prefix',
  'request_id',
  'txn_id',
];

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** API log records: method, path, status, latency, client address and key prefix; never a key or a body. */
export async function reportApiLogs(
  store: Store,
  filter: ApiLogFilter,
  paging: Paging,
  scope: Scope,
  pacer?: Pacer,
): Promise<ReportResult> {
  await store.readDurable();
  const result = await store.reads.apiLogsInTurns(
    apiLogSelect(filter, scope),
    pageOf(paging),
    paging.order,
    pacer,
  );
  const rows = result.rows.map((record) => apiLogRow(record, scope));
  return {
    report: 'api-logs',
    columns: apiLogColumns(scope),
    total: result.total,
    page: paging.page,
    limit: paging.limit,
    totals: {
      count: result.total,
      errors: result.errors,
      mean_latency_ms: result.total
        ? Math.round((result.latency_total_ms / result.total) * 1000) / 1000
        : null,
    },
    rows,
  };
}

/** The API log report's rows alone, streamed a batch at a time. */
export async function* apiLogRows(
  store: Store,
  filter: ApiLogFilter,
  paging: Paging,
  scope: Scope,
  pacer: Pacer,
): AsyncGenerator<Row[]> {
  await store.readDurable();
  const select = apiLogSelect(filter, scope);
  for await (const records of store.reads.apiLogRecords(
    select,
    pageOf(paging),
    paging.order,
    pacer,
  ))
    yield records.map((record) => apiLogRow(record, scope));
}

const apiLogColumns = (scope: Scope) => [
  ...(showAccount(scope) ? ['account_id'] : []),
  ...API_LOG_COLUMNS,
];

const apiLogSelect = (filter: ApiLogFilter, scope: Scope): LogSelect => ({
  account_id: scope.account_id,
  from_ms: filter.from,
  to_ms: filter.to,
  status: filter.status,
  method: filter.method,
  service: filter.service,
  match: filter.txn_id ? (record) => record.txn_id === filter.txn_id : undefined,
  as_of: scope.as_of,
});

const loggedUrl = (url: string | null) => (url === null ? '' : loggableUrl(url));

function apiLogRow(record: HistoryRecord, scope: Scope): Row {
  return {
    ...(showAccount(scope) ? { account_id: text(record.account_id) } : {}),
    ts: record.ts,
    direction: text(record.direction) ?? 'inbound',
    method: text(record.method),
    // Outbound rows written before their URL was logged without userinfo and query show it so.
    path: text(record.path) ?? loggedUrl(text(record.url)),
    status: typeof record.status === 'number' ? record.status : null,
    latency_ms: typeof record.latency_ms === 'number' ? record.latency_ms : null,
    ip: text(record.ip),
    key_prefix: text(record.key_prefix),
    request_id: text(record.request_id),
    txn_id: text(record.txn_id),
  };
}

export interface AiUsageFilter {
  from?: number | undefined;
  to?: number | undefined;
  /** The wire protocol, as the chat room names it (chat, responses, messages, ...). */
  protocol?: string | undefined;
  /** The usage record's status: ok, client_closed, upstream_error, stream_error. */
  status?: string | undefined;
}

const AI_USAGE_COLUMNS = [
  'request_id',
  'ts',
  'key_id',
  'model',
  'tier',
  'protocol',
  'target',
  'status',
  'stream',
  'usage',
  'prompt_tokens',
  'cached_tokens',
  'completion_tokens',
  'reasoning_tokens',
  'cost',
  'owed',
  'latency_ms',
];

const count = (value: unknown): number =>
  typeof value === 'number' && Number.isSafeInteger(value) ? value : 0;

/**
 * One account's AI requests, one row per usage record (every protocol): tokens with their
 * cached and reasoning parts, whether the upstream reported them or the gateway estimated
 * them, the cost and the part of it owed (beyond the wallet). Totals of count, cost and
 * tokens come from the index, folded entry by entry in turns of `pacer` (memory holds the
 * page, never the range); a protocol or status filter reads each record in range.
 */
export async function reportAiUsage(
  store: Store,
  filter: AiUsageFilter,
  paging: Paging,
  scope: Scope,
  pacer?: Pacer,
): Promise<ReportResult> {
  await store.readDurable();
  const account_id = scope.account_id;
  const result =
    account_id === null
      ? { total: 0, cost_micros: 0, tokens: 0, rows: [] }
      : await store.reads.usageInTurns(
          usageSelect(filter, account_id, scope),
          pageOf(paging),
          paging.order,
          pacer,
        );
  return {
    report: 'ai-usage',
    columns: aiUsageColumns(scope),
    total: result.total,
    page: paging.page,
    limit: paging.limit,
    totals: { count: result.total, cost: microsToUnits(result.cost_micros), tokens: result.tokens },
    rows: result.rows.map((record) => aiUsageRow(record, scope)),
  };
}

/** The AI usage report's rows alone, streamed a batch at a time. */
export async function* aiUsageRows(
  store: Store,
  filter: AiUsageFilter,
  paging: Paging,
  scope: Scope,
  pacer: Pacer,
): AsyncGenerator<Row[]> {
  await store.readDurable();
  if (scope.account_id === null) return;
  const select = usageSelect(filter, scope.account_id, scope);
  for await (const records of store.reads.usageRecords(select, pageOf(paging), paging.order, pacer))
    yield records.map((record) => aiUsageRow(record, scope));
}

const aiUsageColumns = (scope: Scope) => [
  ...(showAccount(scope) ? ['account_id'] : []),
  ...AI_USAGE_COLUMNS,
];

function usageSelect(filter: AiUsageFilter, account_id: string, scope: Scope): UsageSelect {
  const wanted = filter.protocol !== undefined || filter.status !== undefined;
  return {
    account_id,
    as_of: scope.as_of,
    from_ms: filter.from,
    to_ms: filter.to,
    match: wanted
      ? (record) =>
          (filter.protocol === undefined || (record.protocol ?? 'chat') === filter.protocol) &&
          (filter.status === undefined || record.status === filter.status)
      : undefined,
  };
}

function aiUsageRow(record: HistoryRecord, scope: Scope): Row {
  return {
    ...(showAccount(scope) ? { account_id: text(record.account_id) } : {}),
    request_id: text(record.request_id),
    ts: record.ts,
    key_id: text(record.key_id),
    model: text(record.model),
    tier: text(record.tier),
    protocol: text(record.protocol) ?? 'chat',
    target: text(record.target),
    status: text(record.status),
    stream: record.stream === true,
    usage: record.usage_estimated === true ? 'estimated' : 'reported',
    prompt_tokens: count(record.prompt_tokens),
    cached_tokens: count(record.cached_tokens),
    completion_tokens: count(record.completion_tokens),
    reasoning_tokens: count(record.reasoning_tokens),
    cost: microsToUnits(count(record.cost_micros)),
    owed: microsToUnits(count(record.receivable_micros)),
    latency_ms: typeof record.latency_ms === 'number' ? record.latency_ms : null,
  };
}
