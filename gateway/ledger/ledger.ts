// The double-entry ledger. Ledger accounts:
//   wallet:<account>      a customer's spendable balance (never below zero)
//   hold:<account>        a customer's money reserved by open holds (never below zero)
//   funding:topup         where credits come from (goes negative as money comes in)
//   revenue:<service>     what the platform earned (AI usage, fees, charges)
//   commission:<service>  commissions paid out to customers (an expense, goes negative)
//   provider:<service>    money owed to or settled with upstream providers
//   gst:cgst, gst:sgst, gst:utgst, gst:igst   GST collected on the platform's fees (owed to the government)
//   tds:194h              income tax deducted at source from commissions (owed to the government)
//   override:<service>    distributors' override commissions (an expense, goes negative)
// Every posting's entries sum to zero, so the sum of all ledger accounts is always zero.
import { newId } from '../util/ids.js';
import type { Tx } from '../store/types.js';
import { rowOf, type Hold, type Posting, type State } from '../store/state.js';

/**
 * Chat reservations shared by every gateway on one database (PostgreSQL store): a row per
 * request in flight, owned by a gateway that renews its lease, and per account the sum of
 * them, so that every gateway's spenders see what every other one has set aside.
 */
export interface SharedReservation {
  id: string;
  account_id: string;
  amount_micros: number;
  gateway: string;
  lease_until_ms: number;
  /** The limited key whose limit this amount is held against too (chat/key-hold.ts). */
  key_id?: string;
}

declare module '../store/state.js' {
  interface Tables {
    chat_reservations: Record<string, SharedReservation>;
    /** account id → the sum of its shared reservations' amounts. */
    chat_reserved: Record<string, number>;
  }
}

export const walletAccount = (account_id: string) => `wallet:${account_id}`;
export const holdAccount = (account_id: string) => `hold:${account_id}`;
export const FUNDING_TOPUP = 'funding:topup';
/**
 * What an account owes (an AI answer that cost more than its wallet held): the balance of
 * `receivable:<account>` is minus the debt, so the ledger still sums to zero and no wallet
 * goes below zero. The next credit to the wallet pays it first.
 */
export const receivableAccount = (account_id: string) => `receivable:${account_id}`;

export function owedMicros(state: State, account_id: string): number {
  return 0 - (state.balances[receivableAccount(account_id)] ?? 0) || 0;
}

/** Records a debt the wallet could not pay: `to` gets its due, the account's receivable owes it. */
export function recordReceivable(
  tx: Tx,
  input: { account_id: string; amount_micros: number; to: string; memo: string; ref?: string },
): Posting {
  assertAmount(input.amount_micros, false);
  return post(tx, {
    memo: input.memo,
    account_id: input.account_id,
    ref: input.ref,
    entries: [
      [receivableAccount(input.account_id), -input.amount_micros],
      [input.to, input.amount_micros],
    ],
  });
}

export class InsufficientBalanceError extends Error {
  override name = 'InsufficientBalanceError';
  constructor(
    readonly balance_micros: number,
    readonly required_micros: number,
  ) {
    super(
      `insufficient balance: ${balance_micros} micro-units available, ${required_micros} required`,
    );
  }
}

export class LedgerError extends Error {
  override name = 'LedgerError';
}

export function balanceMicros(state: State, account_id: string): number {
  return state.balances[walletAccount(account_id)] ?? 0;
}

export function heldMicros(state: State, account_id: string): number {
  return state.balances[holdAccount(account_id)] ?? 0;
}

/**
 * Volatile reservations: money set aside in memory for a request in flight whose cost is
 * not known yet (a chat completion), never journaled. Every spender in this module checks
 * the wallet minus these, so concurrent requests can never spend the same money; and since
 * nothing is written until the final cost is posted, a request costs one durable commit. A
 * crash loses the reservation with the request it belonged to; that request is billed if
 * and only if its final posting reached the disk (possibly with no answer delivered).
 * Payments use durable holds instead (openHold): their money must stay reserved across a
 * restart while a provider decides.
 */
const reservations = new WeakMap<State, Map<string, number>>();

function reservedOf(state: State): Map<string, number> {
  let map = reservations.get(state);
  if (!map) reservations.set(state, (map = new Map()));
  return map;
}

export function reservedMicros(state: State, account_id: string): number {
  const shared = state.tables.chat_reserved
    ? (rowOf(state.tables.chat_reserved, account_id) ?? 0)
    : 0;
  return (reservations.get(state)?.get(account_id) ?? 0) + shared;
}

/** What the account may spend now: its wallet minus its volatile reservations. */
export function availableMicros(state: State, account_id: string): number {
  return balanceMicros(state, account_id) - reservedMicros(state, account_id);
}

/**
 * Whether the account may spend `micros` now (its wallet less every reservation): the check
 * every debit makes. Asked through `tx.covers`, so that on PostgreSQL it is a condition of the
 * commit rather than a read of the exact balance (two debits of one wallet then commit both
 * unless together they overdraw it); the same answer as `availableMicros(...) >= micros`.
 */
export function hasAvailable(tx: Tx, account_id: string, micros: number): boolean {
  const volatile = reservations.get(tx.state)?.get(account_id) ?? 0;
  return tx.covers(walletAccount(account_id), micros + volatile, [['chat_reserved', account_id]]);
}

/** The refusal of a debit the wallet cannot cover, with what it has (an exact read). */
function insufficient(tx: Tx, account_id: string, micros: number): InsufficientBalanceError {
  return new InsufficientBalanceError(availableMicros(tx.state, account_id), micros);
}

export interface VolatileReservation {
  readonly account_id: string;
  readonly amount_micros: number;
  /** Gives the money back to the available balance; only the first call counts. */
  release(): void;
  /** Releases it inside a transaction (a shared reservation: its row goes with the settlement); returns what was still reserved. */
  releaseIn?(tx: Tx): number;
}

/** Sets `amount_micros` aside in memory, or throws InsufficientBalanceError. Synchronous: no other spender runs in between. */
export function reserveMicros(
  state: State,
  account_id: string,
  amount_micros: number,
): VolatileReservation {
  assertAmount(amount_micros, true);
  const available = availableMicros(state, account_id);
  if (available < amount_micros) throw new InsufficientBalanceError(available, amount_micros);
  const map = reservedOf(state);
  if (amount_micros > 0) map.set(account_id, (map.get(account_id) ?? 0) + amount_micros);
  let released = false;
  return {
    account_id,
    amount_micros,
    release() {
      if (released || amount_micros === 0) return;
      released = true;
      const left = (map.get(account_id) ?? 0) - amount_micros;
      if (left > 0) map.set(account_id, left);
      else map.delete(account_id);
    },
  };
}

function assertAmount(amount_micros: number, allow_zero: boolean): void {
  if (
    !Number.isSafeInteger(amount_micros) ||
    amount_micros < 0 ||
    (!allow_zero && amount_micros === 0)
  ) {
    throw new LedgerError(`invalid amount ${amount_micros}`);
  }
}

function post(tx: Tx, posting: Omit<Posting, 'id' | 'ts'>): Posting {
  const full: Posting = {
    id: newId('pst'),
    ts: tx.now.toISOString(),
    ...posting,
    entries: posting.entries.filter(([, amount_micros]) => amount_micros !== 0),
  };
  tx.post(full);
  return full;
}

/**
 * Moves money from `from` into a customer wallet (a top-up, a refund, a commission). With
 * `withheld` (a commission's TDS), `from` gives the amount plus what is withheld, and each
 * withheld part goes to its own account in the same posting: the wallet gets the net.
 */
export function creditWallet(
  tx: Tx,
  input: {
    account_id: string;
    amount_micros: number;
    from: string;
    memo: string;
    ref?: string;
    withheld?: ReadonlyArray<readonly [string, number]>;
    meta?: Posting['meta'];
  },
): Posting {
  assertAmount(input.amount_micros, false);
  const withheld = input.withheld ?? [];
  let withheld_micros = 0;
  for (const [, amount_micros] of withheld) {
    assertAmount(amount_micros, true);
    withheld_micros += amount_micros;
  }
  const credit = post(tx, {
    memo: input.memo,
    account_id: input.account_id,
    ref: input.ref,
    ...(input.meta ? { meta: input.meta } : {}),
    entries: [
      [input.from, -(input.amount_micros + withheld_micros)],
      [walletAccount(input.account_id), input.amount_micros],
      ...withheld.map(([account, amount_micros]): [string, number] => [account, amount_micros]),
    ],
  });
  settleReceivable(tx, input.account_id, input.ref);
  return credit;
}

/** A credit pays what the account owes first, as far as the wallet (less money in flight) covers it. */
function settleReceivable(tx: Tx, account_id: string, ref: string | undefined): void {
  const owed = owedMicros(tx.state, account_id);
  if (owed <= 0) return;
  const paid = Math.min(owed, availableMicros(tx.state, account_id));
  if (paid <= 0) return;
  post(tx, {
    memo: 'owed for usage beyond the wallet, paid from this credit',
    account_id,
    ref,
    entries: [
      [walletAccount(account_id), -paid],
      [receivableAccount(account_id), paid],
    ],
  });
}

/**
 * Takes money from a customer wallet to `to` (or, with `split`, to several accounts whose
 * parts add up to the amount: a fee's taxable value and its GST); throws
 * InsufficientBalanceError when it can't.
 */
export function debitWallet(
  tx: Tx,
  input: {
    account_id: string;
    amount_micros: number;
    to: string;
    memo: string;
    ref?: string;
    split?: ReadonlyArray<readonly [string, number]>;
    meta?: Posting['meta'];
  },
): Posting {
  assertAmount(input.amount_micros, false);
  if (!hasAvailable(tx, input.account_id, input.amount_micros))
    throw insufficient(tx, input.account_id, input.amount_micros);
  return post(tx, {
    memo: input.memo,
    account_id: input.account_id,
    ref: input.ref,
    ...(input.meta ? { meta: input.meta } : {}),
    entries: [
      [walletAccount(input.account_id), -input.amount_micros],
      ...destinations(input.to, input.amount_micros, input.split),
    ],
  });
}

/**
 * Clears wallet-to-wallet transfers: each transfer passes through it in one commit, so its
 * balance is zero after every commit (verify checks it).
 */
export const NETWORK_TRANSFERS = 'network:transfers';

/**
 * Moves money from one customer wallet to another (a distributor funding its retailer): two
 * postings in the caller's commit, one per wallet (each wallet's history shows its side),
 * through NETWORK_TRANSFERS. Throws InsufficientBalanceError when the payer can't.
 */
export function transferWallet(
  tx: Tx,
  input: {
    from_account_id: string;
    to_account_id: string;
    amount_micros: number;
    memo_from: string;
    memo_to: string;
    ref?: string;
  },
): { debit: Posting; credit: Posting } {
  assertAmount(input.amount_micros, false);
  if (input.from_account_id === input.to_account_id)
    throw new LedgerError('a wallet cannot be moved into itself');
  const debit = debitWallet(tx, {
    account_id: input.from_account_id,
    amount_micros: input.amount_micros,
    to: NETWORK_TRANSFERS,
    memo: input.memo_from,
    ...(input.ref !== undefined ? { ref: input.ref } : {}),
  });
  const credit = creditWallet(tx, {
    account_id: input.to_account_id,
    amount_micros: input.amount_micros,
    from: NETWORK_TRANSFERS,
    memo: input.memo_to,
    ...(input.ref !== undefined ? { ref: input.ref } : {}),
  });
  return { debit, credit };
}

/** `[to, amount]`, or `split` when given: its parts must be non-negative and add up to the amount. */
function destinations(
  to: string,
  amount_micros: number,
  split: ReadonlyArray<readonly [string, number]> | undefined,
): Array<[string, number]> {
  if (!split) return [[to, amount_micros]];
  let sum = 0;
  for (const [, part] of split) {
    assertAmount(part, true);
    sum += part;
  }
  if (sum !== amount_micros) throw new LedgerError(`a split of ${amount_micros} adds up to ${sum}`);
  return split.map(([account, part]): [string, number] => [account, part]);
}

/** Reserves money for an operation whose final cost is not known yet. */
export function openHold(
  tx: Tx,
  input: { account_id: string; amount_micros: number; purpose: string; ref?: string | null },
): Hold {
  assertAmount(input.amount_micros, true);
  if (!hasAvailable(tx, input.account_id, input.amount_micros))
    throw insufficient(tx, input.account_id, input.amount_micros);
  const hold: Hold = {
    id: newId('hld'),
    account_id: input.account_id,
    amount_micros: input.amount_micros,
    purpose: input.purpose,
    ref: input.ref ?? null,
    created_at: tx.now.toISOString(),
  };
  post(tx, {
    memo: `hold for ${input.purpose}`,
    account_id: input.account_id,
    ref: input.ref ?? undefined,
    hold: { id: hold.id, action: 'open' },
    entries: [
      [walletAccount(input.account_id), -input.amount_micros],
      [holdAccount(input.account_id), input.amount_micros],
    ],
  });
  tx.set('holds', hold.id, hold);
  return hold;
}

function openHoldOrThrow(tx: Tx, hold_id: string): Hold {
  const hold = tx.get('holds', hold_id);
  if (!hold) throw new LedgerError(`hold ${hold_id} is not open (already resolved or unknown)`);
  return hold;
}

/**
 * Resolves a hold by paying `amount_micros` of it to `to` and releasing the rest back to the
 * wallet. Exactly once: a resolved hold is gone from the open set.
 */
export function captureHold(
  tx: Tx,
  hold_id: string,
  input: {
    amount_micros: number;
    to: string;
    memo: string;
    /** The destination in parts (a fee's taxable value and its GST), adding up to the amount. */
    split?: ReadonlyArray<readonly [string, number]>;
    meta?: Posting['meta'];
  },
): Posting {
  const hold = openHoldOrThrow(tx, hold_id);
  assertAmount(input.amount_micros, true);
  if (input.amount_micros > hold.amount_micros) {
    throw new LedgerError(
      `capture of ${input.amount_micros} exceeds hold ${hold_id} of ${hold.amount_micros}`,
    );
  }
  const posting = post(tx, {
    memo: input.memo,
    account_id: hold.account_id,
    ref: hold.ref ?? undefined,
    hold: { id: hold.id, action: 'capture' },
    ...(input.meta ? { meta: input.meta } : {}),
    entries: [
      [holdAccount(hold.account_id), -hold.amount_micros],
      ...destinations(input.to, input.amount_micros, input.split),
      [walletAccount(hold.account_id), hold.amount_micros - input.amount_micros],
    ],
  });
  tx.del('holds', hold.id);
  return posting;
}

/** Releases the whole hold back to the wallet (the automatic refund). Exactly once. */
export function voidHold(tx: Tx, hold_id: string, memo: string): Posting {
  const hold = openHoldOrThrow(tx, hold_id);
  const posting = post(tx, {
    memo,
    account_id: hold.account_id,
    ref: hold.ref ?? undefined,
    hold: { id: hold.id, action: 'void' },
    entries: [
      [holdAccount(hold.account_id), -hold.amount_micros],
      [walletAccount(hold.account_id), hold.amount_micros],
    ],
  });
  tx.del('holds', hold.id);
  return posting;
}

/**
 * Undoes what earlier postings of one account moved: posts `entries` negated (each of them the
 * net, per ledger account, of postings that summed to zero, so their negation does too). A
 * customer wallet that the negation would take below what it can spend gives what it has, and
 * the rest becomes a debt of that account (`receivable:<account>`, paid from its next credit),
 * so no wallet goes below zero. The debt is its own posting before the reversal (receivable to
 * wallet), so the reversal always moves the wallet it takes from: a wallet's history (and every
 * statement read from it) lists the reversal even when the wallet held nothing. Hold accounts
 * must net to zero (a hold still open is resolved, not reversed).
 */
export function postReversal(
  tx: Tx,
  input: {
    account_id: string;
    entries: ReadonlyArray<readonly [string, number]>;
    memo: string;
    ref?: string;
    meta?: Posting['meta'];
  },
): Posting {
  const entries: Array<[string, number]> = [];
  const owed = new Map<string, number>();
  let total = 0;
  for (const [account, amount] of input.entries) {
    if (!Number.isSafeInteger(amount)) throw new LedgerError(`invalid amount ${amount}`);
    total += amount;
    if (amount === 0) continue;
    if (account.startsWith('hold:'))
      throw new LedgerError(`${account} moved ${amount} net: a hold still open cannot be reversed`);
    const back = -amount;
    if (account.startsWith('wallet:') && back < 0) {
      const owner = account.slice('wallet:'.length);
      const can = Math.max(0, Math.min(-back, availableMicros(tx.state, owner)));
      if (-back - can > 0) owed.set(owner, (owed.get(owner) ?? 0) - back - can);
      entries.push([account, back]);
      continue;
    }
    entries.push([account, back]);
  }
  if (total !== 0) throw new LedgerError(`entries to reverse sum to ${total}, not zero`);
  for (const [owner, micros] of owed)
    post(tx, {
      memo: `owed: what the wallet could not pay of the ${input.memo}`,
      account_id: owner,
      ref: input.ref,
      entries: [
        [receivableAccount(owner), -micros],
        [walletAccount(owner), micros],
      ],
    });
  const posting = post(tx, {
    memo: input.memo,
    account_id: input.account_id,
    ref: input.ref,
    entries,
    ...(input.meta ? { meta: input.meta } : {}),
  });
  if (
    entries.some(([account, amount]) => account === walletAccount(input.account_id) && amount > 0)
  )
    settleReceivable(tx, input.account_id, input.ref);
  return posting;
}
