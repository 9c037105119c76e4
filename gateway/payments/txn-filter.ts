// The one selection of payment transactions (service, status, number or mobile, transaction
// id, date range): the account's list, the admin list, the reports and the dashboard use it.
import { z } from 'zod';
import type { Store } from '../store/store.js';
import type { PaymentTxn } from './tables.js';

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
        ctx.addIssue({ code: 'custom', message: 'must be a date (YYYY-MM-DD) or an ISO timestamp' });
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
  status: z.enum(['pending', 'success', 'failed']).optional(),
  /** The number, consumer number, account number or PAN; or a transfer's remitter mobile. */
  number: z.string().trim().max(40).optional(),
  txn_id: z.string().trim().max(64).optional(),
  from: dateBound(false).optional(),
  to: dateBound(true).optional(),
  ...page,
});

export type TransactionFilter = Pick<z.output<typeof transactionsQuery>, 'service' | 'status' | 'number' | 'txn_id' | 'from' | 'to'>;

/** The payment transactions to filter: one account's through the store's index, else every one. */
export function candidateTxns(store: Store, account_id: string | null | undefined): Iterable<PaymentTxn> {
  return account_id ? store.indexBy('payment_txns', 'account_id').rows(account_id) : Object.values(store.rows('payment_txns'));
}

/** The one selection of transactions: the account's list, the reports, the admin list and the dashboard use it. */
export function filterTransactions(rows: Iterable<PaymentTxn>, query: TransactionFilter, account_id: string | null): PaymentTxn[] {
  const list: PaymentTxn[] = [];
  for (const txn of rows) {
    if (account_id !== null && txn.account_id !== account_id) continue;
    if (query.service && txn.service !== query.service) continue;
    if (query.status && txn.status !== query.status) continue;
    if (query.number && txn.subject !== query.number && txn.details.mobile !== query.number) continue;
    if (query.txn_id && txn.id !== query.txn_id) continue;
    const at = Date.parse(txn.created_at);
    if (query.from !== undefined && at < query.from) continue;
    if (query.to !== undefined && at > query.to) continue;
    list.push(txn);
  }
  return list.sort((a, b) => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id));
}

