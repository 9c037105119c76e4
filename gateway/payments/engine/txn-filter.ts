// The one selection of payment transactions (service, status, number or mobile, transaction
// id, date range): the account's list, the admin list, the reports and the dashboard use it.
import { z } from 'zod';
import type { Page, ReadSnapshot, Store } from '../../store/types.js';
import type { Pacer } from '../../store/turns.js';
import { TXN_STATUSES, type PaymentTxn } from './tables.js';

export const SERVICES = ['recharge', 'dmt', 'pan', 'bills'] as const;

/** `2025-01-31` (the whole day, UTC) or a full ISO timestamp. */
export const dateBound = (end: boolean) =>
  z
    .string()
    .max(40)
    .transform((text, ctx) => {
      const day = /^\d{4}-\d{2}-\d{2}$/.test(text);
      const ms = Date.parse(day ? `${text}T00:00:00.000Z` : text);
      if (Number.isNaN(ms)) {
        ctx.addIssue({
          code: 'custom',
          message: 'must be a date (YYYY-MM-DD) or an ISO timestamp',
        });
        return z.NEVER;
      }
      return day && end ? ms + 86_400_000 - 1 : ms;
    });

const page = {
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  limit: z.coerce.number().int().min(1).max(500).default(50),
};

export const transactionsQuery = z.object({
  service: z.enum(SERVICES).optional(),
  status: z.enum(TXN_STATUSES).optional(),
  /** The number, consumer number, account number or PAN; or a transfer's remitter mobile. */
  number: z.string().trim().max(40).optional(),
  txn_id: z.string().trim().max(64).optional(),
  from: dateBound(false).optional(),
  to: dateBound(true).optional(),
  ...page,
});

/** The admin's list of every account's transactions (GET /admin/transactions): one account, or all. */
export const adminTransactionsQuery = transactionsQuery.extend({
  account_id: z.string().max(100).optional(),
});

export type TransactionFilter = Pick<
  z.output<typeof transactionsQuery>,
  'service' | 'status' | 'number' | 'txn_id' | 'from' | 'to'
>;

/**
 * The one selection of transactions, through the store's read interface: the account's
 * list, the reports, the admin list and the dashboard use it. Newest created first; `page`
 * null: every match (reports). Service, status and dates are answered from the indexes; a
 * number or id filter reads the transactions in range.
 */
export async function selectTransactions(
  store: Store,
  query: TransactionFilter,
  account_id: string | null,
  page: Page | null,
): Promise<{ total: number; rows: PaymentTxn[] }> {
  const match = matcher(query);
  if (query.txn_id && !query.number) {
    // One id: found by id, not by reading the range.
    const txn = await store.fetch('payment_txns', query.txn_id);
    const rows =
      txn && (account_id === null || txn.account_id === account_id) && filterOne(txn, query)
        ? [txn]
        : [];
    return { total: rows.length, rows: page === null || page.offset === 0 ? rows : [] };
  }
  return store.reads.txns(
    {
      account_id,
      service: query.service,
      status: query.status,
      from_ms: query.from,
      to_ms: query.to,
      match,
    },
    page,
  );
}

/** A number or id filter: a test of the row (the index knows neither). */
function matcher(query: TransactionFilter): ((txn: PaymentTxn) => boolean) | undefined {
  if (!query.number && !query.txn_id) return undefined;
  return (txn) =>
    (!query.number || txn.subject === query.number || txn.details.mobile === query.number) &&
    (!query.txn_id || txn.id === query.txn_id);
}

/**
 * The same selection for a report: every match, in created order, a chunk of rows at a time
 * with the event loop running between chunks (a year of every account neither holds the
 * gateway up nor sits in memory at once); as of `as_of` when given (see ReadSnapshot).
 */
export async function* transactionChunks(
  store: Store,
  query: TransactionFilter,
  { account_id, as_of }: { account_id: string | null; as_of?: ReadSnapshot | undefined },
  order: 'asc' | 'desc',
  pacer?: Pacer,
): AsyncGenerator<PaymentTxn[]> {
  if (query.txn_id && !query.number) {
    // One id: its row as the snapshot first found it (a count and its rows agree).
    const find = async () => (await selectTransactions(store, query, account_id, null)).rows;
    const rows = await (as_of ? as_of.once(`txn-id/${query.txn_id}`, find) : find());
    if (rows.length > 0) yield rows;
    return;
  }
  yield* store.reads.txnChunks(
    {
      account_id,
      as_of,
      service: query.service,
      status: query.status,
      from_ms: query.from,
      to_ms: query.to,
      match: matcher(query),
    },
    order,
    pacer,
  );
}

function filterOne(txn: PaymentTxn, query: TransactionFilter): boolean {
  if (query.service && txn.service !== query.service) return false;
  if (query.status && txn.status !== query.status) return false;
  const at = Date.parse(txn.created_at);
  if (query.from !== undefined && at < query.from) return false;
  if (query.to !== undefined && at > query.to) return false;
  return true;
}
