// Chat reservations across gateways (PostgreSQL store, issue #18). With the JSON-file store a
// reservation is volatile memory (ledger.reserveMicros): one process sees every spender. With
// several gateways on one database, the worst case set aside on one must be respected by all:
// a reservation is then a row written through the shared log (`chat_reservations`, with the
// per-account sum in `chat_reserved`, which ledger.reservedMicros adds), owned by the gateway
// that took it. The owner renews its leases; a lease that lapsed (its gateway died) is
// released by whichever gateway notices first; the settlement deletes the row in the same
// commit as the debit, so a request is billed once and its money is never held twice.
import {
  InsufficientBalanceError,
  availableMicros,
  hasAvailable,
  type SharedReservation,
  type VolatileReservation,
} from '../ledger/ledger.js';
import type { RequestScope } from '../kernel/request-scope.js';
import type { Store, Tx } from '../store/types.js';
import { keyHeldDropped } from './key-hold.js';

export const DEFAULT_LEASE_MS = 30_000;

/** Deletes a reservation's row and takes its amount off the account's sum (a delta); returns the amount (0: gone already). */
function drop(tx: Tx, id: string): number {
  const row = tx.get('chat_reservations', id);
  if (!row) return 0;
  tx.del('chat_reservations', id);
  tx.add('chat_reserved', row.account_id, -row.amount_micros);
  if (row.key_id) keyHeldDropped(tx, row.key_id, row.amount_micros);
  return row.amount_micros;
}

/** Reservations looked at per lapse pass (the rest wait for the next one). */
const LAPSED_PER_PASS = 1_000;

export class SharedReservations {
  private readonly mine = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private renewing: Promise<void> | null = null;

  constructor(
    private readonly store: Store,
    readonly gateway: string,
    readonly lease_ms: number = DEFAULT_LEASE_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Renews this gateway's leases and releases lapsed ones, every third of a lease. */
  start(): void {
    this.timer = setInterval(() => void this.tick(), Math.max(50, Math.floor(this.lease_ms / 3)));
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One renewal and lapse pass (the timer's; tests call it too). */
  tick(): Promise<void> {
    this.renewing ??= this.pass()
      .catch(() => {}) // the database is down: the next tick tries again (leases are three ticks long)
      .finally(() => {
        this.renewing = null;
      });
    return this.renewing;
  }

  /**
   * Renews this gateway's own leases (it knows their ids), then releases lapsed ones: their ids
   * from an indexed query of leases past now, each released in a transaction that reads it (a
   * lease renewed meanwhile is left alone; two gateways release one lease once).
   */
  private async pass(): Promise<void> {
    // One transaction per reservation: each waits only for a commit in flight on its own row
    // (its settlement), never for all of them.
    await Promise.all(
      [...this.mine].map((id) =>
        this.store.transact((tx) => {
          const row = tx.get('chat_reservations', id);
          if (row && row.gateway === this.gateway && this.mine.has(id))
            tx.set('chat_reservations', id, { ...row, lease_until_ms: this.now() + this.lease_ms });
        }),
      ),
    );
    const lapsed = await this.store.below(
      'chat_reservations',
      'lease_until_ms',
      this.now(),
      LAPSED_PER_PASS,
    );
    if (lapsed.length > 0)
      await this.store.transact((tx) => {
        const now = this.now();
        for (const id of lapsed) {
          const row = tx.get('chat_reservations', id);
          if (row && row.lease_until_ms < now && !this.mine.has(id)) drop(tx, id);
        }
      });
  }

  /**
   * Sets the worst case aside for every gateway, or throws InsufficientBalanceError; a limited
   * key's hold (`key`) is checked and taken in the same transaction, and given back with the row.
   */
  async reserve(
    account_id: string,
    request_id: string,
    amount_micros: number,
    key?: { key_id: string; holdIn(tx: Tx): void },
    scope?: RequestScope,
  ): Promise<VolatileReservation> {
    const id = `rsv_${request_id}`;
    // A hold is a lease, not money: its commit need not wait for the WAL flush (the
    // settlement's synchronous commit flushes it; a crash of the database that loses it leaves
    // the settlement to charge what the wallet has: docs/ARCHITECTURE.md).
    await this.store.transact(
      (tx) => {
        key?.holdIn(tx);
        if (!hasAvailable(tx, account_id, amount_micros))
          throw new InsufficientBalanceError(availableMicros(tx.state, account_id), amount_micros);
        if (amount_micros === 0) return;
        const row: SharedReservation = {
          id,
          account_id,
          amount_micros,
          gateway: this.gateway,
          lease_until_ms: this.now() + this.lease_ms,
          ...(key ? { key_id: key.key_id } : {}),
        };
        tx.set('chat_reservations', id, row);
        tx.add('chat_reserved', account_id, amount_micros);
      },
      { durable: false, scope },
    );
    if (amount_micros > 0) this.mine.add(id);
    let released = amount_micros === 0;
    return {
      account_id,
      amount_micros,
      release: () => {
        if (released) return;
        released = true;
        this.mine.delete(id);
        // Not awaited: if the database is down now, the lease lapses and another pass releases it.
        this.store.transact((tx) => drop(tx, id)).catch(() => {});
      },
      releaseIn: (tx: Tx) => {
        const was_released = released;
        const was_mine = this.mine.delete(id);
        released = true;
        // A settlement undone (refused, or run again on another gateway's commit) holds it still.
        tx.onUndo(() => {
          released = was_released;
          if (was_mine) this.mine.add(id);
        });
        return drop(tx, id);
      },
    };
  }
}
