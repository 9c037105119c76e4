// Fills a store with realistic business through the store's own API, in bulk (commits issued
// together, one journal group and one fsync per batch): each
// payment transaction is a hold, its capture (or its void, the refund), the commission, the
// finalized row (about 1.1 kB) and an API log record, exactly the ops the payments engine
// writes; chat usage is a wallet debit and a usage record. Used by the history tests and by
// `npm run bench:store`.
import type { Store } from '../../gateway/store/types.ts';
import {
  FUNDING_TOPUP,
  captureHold,
  creditWallet,
  debitWallet,
  openHold,
  voidHold,
} from '../../gateway/ledger/ledger.ts';
import type { PaymentTxn } from '../../gateway/payments/engine/tables.ts';

export const FILL_T0_MS = Date.parse('2026-01-01T00:00:00Z');

/** The clock to open a store with, so that postings carry the time of the business they record (set per commit). */
export const fillClock = { ms: FILL_T0_MS };
export const fillNow = (): Date => new Date(fillClock.ms);

export interface FillOptions {
  accounts: number;
  txns: number;
  /** Transactions per commit. */
  per_commit?: number;
  /** Milliseconds between consecutive transactions (their timestamps). */
  step_ms?: number;
  first_index?: number;
  t0_ms?: number;
  /** Opening funds of each account (micros), when first_index is 0; default 1e12 (a million units). */
  funds_micros?: number;
  /**
   * Lean: each transaction is one debit of the wallet to the provider and its commission,
   * with no hold and no API log (about half the journal bytes; for the largest tests).
   */
  lean?: boolean;
}

export const fillAccount = (i: number) => `acc_fill_${String(i).padStart(6, '0')}`;
export const fillTxnId = (i: number) => `txn_${i.toString(16).padStart(24, '0')}`;

/** The finalized transaction number i, as the engine would have left it. */
export function fillTxn(i: number, account_id: string, at: string, failed: boolean): PaymentTxn {
  return {
    id: fillTxnId(i),
    account_id,
    service: i % 5 === 0 ? 'bills' : 'recharge',
    status: failed ? 'failed' : 'success',
    stage: 'final',
    amount_micros: 199_000_000,
    charges_micros: 0,
    commission_micros: failed ? 0 : 3_980_000,
    pay_to: 'provider:recharge',
    subject: `98765${String(i % 100_000).padStart(5, '0')}`,
    details: {
      operator: 'JIO',
      operator_id: 4,
      type: 'prepaid',
      mobile: `98765${String(i % 100_000).padStart(5, '0')}`,
    },
    provider_params: { number: '9876543210', operator: 'JIO', amount: 199 },
    hold_id: `hold_${i}`,
    provider: 'sandbox-a',
    provider_ref: `REF${i}`,
    result: failed ? { decline_code: 'DECLINED' } : { operator_ref: `OP${i}` },
    message: failed ? 'declined: number barred; the amount was refunded' : 'success',
    attempts: [
      {
        provider: 'sandbox-a',
        started_at: at,
        finished_at: at,
        outcome: failed ? 'failed' : 'success',
        message: 'ok',
        latency_ms: 12,
      } as never,
    ],
    history: [
      { status: 'pending', at, note: 'accepted' },
      {
        status: failed ? 'failed' : 'success',
        at,
        note: failed ? 'declined by sandbox-a' : 'provider success',
      },
    ],
    checks: { count: 0, next_at: null, last_at: null, last_result: null, stalled: false },
    postings: { hold: 'p1' },
    refund: failed ? { posting_id: 'p2', amount_micros: 199_000_000, at } : null,
    idempotency_key: null,
    client_ref: null,
    created_at: at,
    updated_at: at,
    finalized_at: at,
  };
}

/** Funds every account generously, then writes `txns` finalized transactions round-robin over the accounts. */
export async function fillPayments(store: Store, options: FillOptions): Promise<void> {
  const per_commit = options.per_commit ?? 500;
  const step_ms = options.step_ms ?? 1_000;
  const t0 = options.t0_ms ?? FILL_T0_MS;
  const first = options.first_index ?? 0;
  fillClock.ms = t0 + first * step_ms;
  if (first === 0) {
    for (let a = 0; a < options.accounts; a += 1000) {
      await store.transact((tx) => {
        for (let i = a; i < Math.min(options.accounts, a + 1000); i++)
          creditWallet(tx, {
            account_id: fillAccount(i),
            amount_micros: options.funds_micros ?? 1e12,
            from: FUNDING_TOPUP,
            memo: 'opening funds',
            ref: `fund-${i}`,
          });
      });
    }
  }
  for (let done = 0; done < options.txns; done += per_commit) {
    fillClock.ms = t0 + (first + done) * step_ms;
    // One commit per transaction, as the engine writes them, issued together so that the
    // journal writes them in one group (one fsync): each history record stays its own small
    // journal line, as it is in production.
    const commits: Array<Promise<void>> = [];
    for (let n = done; n < Math.min(options.txns, done + per_commit); n++) {
      commits.push(
        store.transact((tx) => {
          const i = first + n;
          const account_id = fillAccount(i % options.accounts);
          const at = new Date(t0 + i * step_ms).toISOString();
          const failed = i % 17 === 0;
          const txn = fillTxn(i, account_id, at, failed);
          if (options.lean) {
            if (!failed) {
              debitWallet(tx, {
                account_id,
                amount_micros: txn.amount_micros,
                to: txn.pay_to,
                memo: `recharge ${txn.id}`,
                ref: txn.id,
              });
              creditWallet(tx, {
                account_id,
                amount_micros: txn.commission_micros,
                from: 'commission:recharge',
                memo: `recharge commission ${txn.id}`,
                ref: txn.id,
              });
            }
            tx.set('payment_txns', txn.id, txn);
            return;
          }
          const hold = openHold(tx, {
            account_id,
            amount_micros: txn.amount_micros,
            purpose: `recharge ${txn.id}`,
            ref: txn.id,
          });
          if (failed) voidHold(tx, hold.id, `refund of recharge ${txn.id}`);
          else {
            captureHold(tx, hold.id, {
              amount_micros: txn.amount_micros,
              to: txn.pay_to,
              memo: `recharge ${txn.id}`,
            });
            creditWallet(tx, {
              account_id,
              amount_micros: txn.commission_micros,
              from: 'commission:recharge',
              memo: `recharge commission ${txn.id}`,
              ref: txn.id,
            });
          }
          tx.set('payment_txns', txn.id, txn);
          tx.history({
            type: 'api_log',
            ts: at,
            direction: 'inbound',
            request_id: `req_${i}`,
            account_id,
            key_id: `key_${account_id}`,
            key_prefix: 'sk-aihub-abc',
            method: 'POST',
            path: '/api/recharge',
            status: 200,
            latency_ms: 12.5,
            ip: '127.0.0.1',
            txn_id: txn.id,
          });
        }),
      );
    }
    await Promise.all(commits);
  }
}

/** Chat usage: a wallet debit and a usage record per request. */
export async function fillUsage(
  store: Store,
  options: {
    accounts: number;
    records: number;
    per_commit?: number;
    step_ms?: number;
    t0_ms?: number;
    /**
     * Requests written by one commit (default 1, as the gateway writes them). More make the
     * fill faster (fewer journal records, one fsync group either way) for the bench's 10M
     * usage records; every request keeps its own debit and usage record.
     */
    per_record?: number;
  },
): Promise<void> {
  const per_commit = options.per_commit ?? 1_000;
  const per_record = options.per_record ?? 1;
  const t0 = options.t0_ms ?? FILL_T0_MS;
  const end = options.records;
  for (let done = 0; done < end; done += per_commit) {
    fillClock.ms = t0 + done * (options.step_ms ?? 100);
    const commits: Array<Promise<void>> = [];
    for (let first = done; first < Math.min(end, done + per_commit); first += per_record) {
      const last = Math.min(end, done + per_commit, first + per_record);
      commits.push(
        store.transact((tx) => {
          for (let i = first; i < last; i++) {
            const account_id = fillAccount(i % options.accounts);
            const ts = new Date(t0 + i * (options.step_ms ?? 100)).toISOString();
            debitWallet(tx, {
              account_id,
              amount_micros: 1_200,
              to: 'revenue:ai',
              memo: 'chat service-ai-lite 100+20 tokens',
              ref: `req_u${i}`,
            });
            tx.history({
              type: 'usage',
              ts,
              request_id: `req_u${i}`,
              account_id,
              key_id: `key_${account_id}`,
              tier: 'lite',
              model: 'service-ai-lite',
              target: 'builtin',
              status: 'ok',
              stream: false,
              prompt_tokens: 100,
              completion_tokens: 20,
              cost_micros: 1_200,
              latency_ms: 3.2,
            });
          }
        }),
      );
    }
    await Promise.all(commits);
  }
}
