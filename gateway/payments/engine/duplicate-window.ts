// The duplicate window: a pending or successful payment with the same account, service,
// subject and amount within payments.duplicate_window_ms is a likely double submission, refused
// unless the request says allow_duplicate. The window is marks every transaction sees
// (Store.marks): this process's memory with one gateway, restored from history at start;
// rows every gateway reads in its transaction with several.
import { ServiceError } from '../../kernel/errors.js';
import type { Marks, RecentTxn, Store, Tx } from '../../store/types.js';
import { microsToUnits } from '../../util/money.js';
import type { PaymentsConfig } from '../config.js';
import type { PaymentTxn } from './tables.js';
import type { PaymentIntent } from './types.js';

export class DuplicateWindow {
  private readonly recent: Marks<'payment_recent'>;

  constructor(
    private readonly store: Store,
    private readonly config: PaymentsConfig,
  ) {
    this.recent = store.marks('payment_recent');
  }

  /**
   * The transactions finalized within the window before this start, read from the history
   * index (only the fields the window compares), where the window is memory; none where it is
   * rows, which outlive a restart.
   */
  restore(now_ms: number): Promise<RecentTxn[]> {
    const window_ms = this.config.duplicate_window_ms;
    if (window_ms === 0) return Promise.resolve([]);
    return this.recent.restore(() => this.store.reads.recentSince(now_ms - window_ms));
  }

  /** Notes the transactions of before this start that were created within the window. */
  noteAll(txns: readonly RecentTxn[], now_ms: number): void {
    const window_ms = this.config.duplicate_window_ms;
    for (const txn of txns) {
      const at_ms = Date.parse(txn.created_at);
      if (window_ms > 0 && now_ms - at_ms < window_ms)
        this.recent.note(this.recentKeyOf(txn), { txn_id: txn.id, at_ms });
    }
  }

  /** In the commit that opens `txn`: its mark (undone with the commit). */
  note(tx: Tx, txn: PaymentTxn): void {
    if (this.config.duplicate_window_ms > 0)
      this.recent.set(tx, this.recentKeyOf(txn), { txn_id: txn.id, at_ms: tx.now.getTime() });
  }

  /** Forgets the marks past the window (memory; rows are the pruner's). */
  sweep(now_ms: number): void {
    const window_ms = this.config.duplicate_window_ms;
    this.recent.sweep((seen) => now_ms - seen.at_ms >= window_ms);
  }

  private recentKey(
    account_id: string,
    service: string,
    subject: string,
    amount_micros: number,
  ): string {
    return `${account_id}:${service}:${subject}:${amount_micros}`;
  }

  private recentKeyOf(
    txn: Pick<PaymentTxn, 'account_id' | 'service' | 'subject' | 'amount_micros'>,
  ): string {
    return this.recentKey(txn.account_id, txn.service, txn.subject, txn.amount_micros);
  }

  /** A pending or successful twin within the window is a likely double submission; a failed one is not. */
  refuse(intent: PaymentIntent, tx: Tx): void {
    const window_ms = this.config.duplicate_window_ms;
    if (window_ms === 0) return;
    const now_ms = tx.now.getTime();
    const key = this.recentKey(
      intent.account.id,
      intent.service,
      intent.subject,
      intent.amount_micros,
    );
    // Several gateways: the row is read in this transaction (a twin committed on another
    // gateway meanwhile makes the commit conflict, and this runs again on it).
    const seen = this.recent.get(tx, key);
    if (!seen || now_ms - seen.at_ms >= window_ms) return;
    const twin = tx.get('payment_txns', seen.txn_id);
    if (!twin || twin.status === 'failed') return;
    throw new ServiceError(
      'conflict',
      'duplicate_transaction',
      `the same ${intent.service} (${intent.subject}, ${microsToUnits(intent.amount_micros)}) was submitted ${Math.round((now_ms - seen.at_ms) / 1000)} s ago as ${twin.id}; send allow_duplicate: true to repeat it on purpose, or an Idempotency-Key to retry safely`,
      'allow_duplicate',
    );
  }
}
