// The one way a payment transaction's status changes, inside a commit: the move (the status
// table of transactions.ts decides whether it may), and the moves with money (a success's
// postings, a refund of the hold, a reversal of every posting). Each keeps the reconciler's set
// and answers an idempotency key that no request is answering any more.
import {
  balanceMicros,
  holdAccount,
  postReversal,
  voidHold,
  walletAccount,
} from '../../ledger/ledger.js';
import type { PaymentService } from '../../providers/types.js';
import type { Tx } from '../../store/types.js';
import { IDEMPOTENCY_IN_FLIGHT, rowOf, table, type Posting } from '../../store/state.js';
import { payIdempotencyId } from './idempotency.js';
import { ledgerByOwner, ledgerOf, withPostings } from './ledger-effect.js';
import { postSuccess } from './settle.js';
import type { PaymentTxn, TxnStatus } from './tables.js';
import { checkable, transition } from './transactions.js';
import type { EngineHooks, EngineMemory, Renderer } from './types.js';

export class TxnMoves {
  constructor(
    private readonly memory: EngineMemory,
    private readonly hooks: EngineHooks,
    private readonly renderer: (service: PaymentService) => Renderer,
  ) {}

  /**
   * The one way a transaction's status changes (the table in transactions.ts decides whether
   * it may): the row moved, `money` run with every posting it makes recorded on the row
   * (ledger-effect.ts), the row stored, the reconciler's set kept, and the hooks told (the
   * service's bookkeeping, the webhook). A move to the same live status is a note in its history.
   */
  move(
    tx: Tx,
    txn: PaymentTxn,
    to: TxnStatus,
    note: string,
    step: {
      stage?: PaymentTxn['stage'];
      message?: string;
      money?: (moved: PaymentTxn) => Partial<PaymentTxn>;
    } = {},
  ): PaymentTxn {
    const from = txn.status;
    let next = transition(txn, to, tx.now.toISOString(), note, { stage: step.stage });
    if (step.message !== undefined) next = { ...next, message: step.message };
    if (step.money) {
      const mark = tx.posting_count;
      next = { ...next, ...step.money(next) };
      next = withPostings(next, tx.postingsSince(mark));
    }
    tx.set('payment_txns', next.id, next);
    if (next.stage === 'final') this.answerOrphanKey(tx, next);
    const was_checked = this.memory.pending.has(next.id);
    if (checkable(next)) this.memory.pending.add(next.id);
    else this.memory.pending.delete(next.id);
    tx.onUndo(() => {
      if (was_checked) this.memory.pending.add(next.id);
      else this.memory.pending.delete(next.id);
    });
    if (from !== to) this.hooks.onTransition(tx, next, from);
    return next;
  }

  succeed(
    tx: Tx,
    txn: PaymentTxn,
    message: string,
    data: Record<string, string | number>,
  ): PaymentTxn {
    const with_data = { ...txn, result: { ...txn.result, ...data } };
    return this.move(tx, with_data, 'success', message, {
      message: 'success',
      money: (moved) => ({ postings: postSuccess(tx, moved) }),
    });
  }

  /**
   * A payment that did not go through. Refunded at once (failed) unless a provider accepted it
   * first (`accepted`) and its service wants the customer's consent for the refund
   * (refund_pending: the hold stays until the customer's OTP).
   */
  fail(tx: Tx, txn: PaymentTxn, reason: string, note: string, accepted = false): PaymentTxn {
    if (accepted && this.hooks.refundNeedsConsent?.(txn))
      return this.move(tx, txn, 'refund_pending', note, {
        message: `${reason}; the amount stays held until the customer confirms its refund with an OTP (POST /api/dmt/refund/${txn.id}/otp)`,
      });
    return this.move(tx, txn, 'failed', note, {
      message: `${reason}; the amount was refunded`,
      money: (moved) => this.refundHold(tx, moved),
    });
  }

  /** The hold released back to the wallet, and the refund named on the transaction. */
  private refundHold(tx: Tx, txn: PaymentTxn): Partial<PaymentTxn> {
    const refund = voidHold(tx, txn.hold_id, `refund of ${txn.service} ${txn.id}`);
    const wallet = walletAccount(txn.account_id);
    const amount_micros = refund.entries.find(([account]) => account === wallet)?.[1] ?? 0;
    return {
      postings: { ...txn.postings, refund: refund.id },
      refund: { posting_id: refund.id, amount_micros, at: tx.now.toISOString() },
    };
  }

  /**
   * A success undone (the operator or bank reversed it, or an operator here did): one posting
   * per account the transaction's postings belonged to, each the exact negation of what they
   * moved for it (the amount and charges back, the commission taken back, and whatever else
   * was posted); a wallet that cannot pay its part owes the rest (receivable).
   */
  reverse(tx: Tx, txn: PaymentTxn, by: 'provider' | 'admin', reason: string): PaymentTxn {
    const who = by === 'admin' ? 'an operator' : (txn.provider ?? 'the provider');
    return this.move(tx, txn, 'reversed', `reversed by ${who}: ${reason}`, {
      message: `reversed by ${who} (${reason}); the amount was returned to the wallet and the commission taken back`,
      money: (moved) => {
        const at = tx.now.toISOString();
        const own = [walletAccount(moved.account_id), `receivable:${moved.account_id}`];
        let first: string | null = null;
        let wallet_micros = 0;
        let commission_micros = 0;
        for (const [owner, entries] of ledgerByOwner(ledgerOf(moved))) {
          const posting = postReversal(tx, {
            account_id: owner || moved.account_id,
            entries: capturedFromWallet(entries, owner || moved.account_id),
            memo: `reversal of ${moved.service} ${moved.id}`,
            ref: moved.id,
            meta: reversalMeta(moved, owner || moved.account_id),
          });
          first ??= posting.id;
          for (const [account, micros] of posting.entries) {
            if (own.includes(account)) wallet_micros += micros;
            if (account.startsWith('commission:')) commission_micros += micros;
          }
        }
        if (first === null) return { reversal: null };
        return {
          postings: { ...moved.postings, reversal: first },
          refund:
            wallet_micros > 0 ? { posting_id: first, amount_micros: wallet_micros, at } : null,
          reversal: { posting_id: first, at, by, reason, wallet_micros, commission_micros },
        };
      },
    });
  }

  /** A refund of the hold to the wallet (an operator's, or the customer's consent): → refunded. */
  refund(tx: Tx, txn: PaymentTxn, note: string): PaymentTxn {
    return this.move(tx, txn, 'refunded', note, {
      message: `${note}; the amount was refunded`,
      money: (moved) => this.refundHold(tx, moved),
    });
  }

  /**
   * In the commit that makes `txn` final: if its idempotency key is still in flight and no
   * request of this gateway is answering it (the gateway that took the request stopped
   * before answering, and the reconciler settled it), the key gets the answer a retry would
   * have been given (the final transaction), so that it leaves the live document for
   * history like every answered key. A request still answering records its own answer.
   */
  private answerOrphanKey(tx: Tx, txn: PaymentTxn): void {
    if (!txn.idempotency_key) return;
    const id = payIdempotencyId(txn.account_id, txn.idempotency_key);
    if (this.memory.answering.has(id)) return;
    // In flight means live: a final record is history already, and no concern of this.
    const record = rowOf(table(tx.state, 'idempotency'), id);
    if (record?.status !== IDEMPOTENCY_IN_FLIGHT) return;
    if ((record.body as { txn_id?: unknown } | null)?.txn_id !== txn.id) return;
    const answer = this.renderer(txn.service)(txn, balanceMicros(tx.state, txn.account_id));
    tx.set('idempotency', id, { ...record, status: answer.http_status, body: answer.body });
  }
}

/**
 * What a reversal posting says of what it reverses, for the statements' lines (their amounts
 * are always what the posting moved): the transaction, its amount, and the owner's part of
 * it (the commission's or override's slab and TDS rate; the fee's GST rate and place).
 */
function reversalMeta(txn: PaymentTxn, owner: string): NonNullable<Posting['meta']> {
  const earning =
    owner === txn.account_id
      ? txn.earning
      : txn.override?.account_id === owner
        ? txn.override
        : undefined;
  return {
    kind: 'reversal',
    txn_id: txn.id,
    service: txn.service,
    txn_account_id: txn.account_id,
    amount_micros: txn.amount_micros,
    ...(earning ? { slab: earning.slab, tds_rate_bp: earning.tds_rate_bp } : {}),
    ...(txn.tax && owner === txn.account_id
      ? { gst_rate_bp: txn.tax.rate_bp, place_of_supply: txn.tax.place_of_supply }
      : {}),
  };
}

/**
 * A success's entries with what it took from its owner's hold counted as taken from the
 * wallet: its hold is resolved (captured), so giving that part back goes to the wallet. A
 * transaction whose hold was opened by another step (a split transfer's part: its holds are
 * opened with the transfer) shows the capture but not the opening; reversing it gave a 500
 * ("a hold still open cannot be reversed") before.
 */
function capturedFromWallet(
  entries: ReadonlyArray<[string, number]>,
  owner: string,
): Array<[string, number]> {
  const net = new Map<string, number>();
  for (const [account, micros] of entries) {
    const as = account === holdAccount(owner) ? walletAccount(owner) : account;
    net.set(as, (net.get(as) ?? 0) + micros);
  }
  return [...net];
}
