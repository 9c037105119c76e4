// The admin's payments rules, as commands the JSON admin API calls (and, through it, the
// dashboard's console): eKYC review (only a submission under review is decided), service
// activation (only after eKYC approval), the IP whitelist (each entry an address or a CIDR
// range, duplicates dropped), request signing, and re-arming a transaction's status checks
// (only while it is pending: never a blind refund). Each change is audited in its own
// commit through `audit`, which the surface supplies (who asked, from where).
import { requireAccount } from '../../accounts/accounts.js';
import { parseWhitelistEntry, type PrefixFloor } from '../../accounts/ip-whitelist.js';
import { ApiError, badRequest, conflict, notFound } from '../../http/errors.js';
import type { Store, Tx } from '../../store/types.js';
import type { Sealer } from '../../util/sealed.js';
import type { PaymentEngine } from '../engine/engine.js';
import type { Audit } from '../logs.js';
import type { ServicesBody } from './schemas.js';
import { clearSigningSecret, setSigningSecret } from '../signing.js';
import type { KycSubmission, PaymentTxn } from '../engine/tables.js';

export function reviewKyc(
  store: Store,
  account_id: string,
  decision: 'approved' | 'rejected',
  reason: string | null,
  audit: Audit,
): Promise<KycSubmission> {
  return store.transact((tx) => {
    const account = requireAccount(tx, account_id);
    const current = tx.get('kyc_submissions', account_id);
    if (!current) throw notFound(`account ${account_id} has not submitted eKYC`, 'kyc_not_found');
    if (current.status !== 'submitted')
      throw conflict(
        `the eKYC submission of ${account_id} is ${current.status} already`,
        'kyc_not_under_review',
      );
    const next = { ...current, status: decision, reason, reviewed_at: tx.now.toISOString() };
    tx.set('kyc_submissions', account_id, next);
    tx.set('accounts', account_id, { ...account, kyc_status: decision });
    audit(tx, { action: decision === 'approved' ? 'kyc.approve' : 'kyc.reject', account_id });
    return next;
  });
}

export function setServices(
  store: Store,
  account_id: string,
  services: ServicesBody,
  audit: Audit,
): Promise<void> {
  return store.transact((tx) => {
    const account = requireAccount(tx, account_id);
    const activating = Object.entries(services)
      .filter(([, on]) => on)
      .map(([name]) => name);
    if (activating.length > 0 && account.kyc_status !== 'approved') {
      throw new ApiError(
        409,
        'kyc_not_approved',
        `payments services (${activating.join(', ')}) can be activated only after eKYC approval; the eKYC status is ${account.kyc_status}`,
        activating[0]!,
      );
    }
    tx.set('accounts', account_id, { ...account, services: { ...account.services, ...services } });
    audit(tx, { action: 'account.services', account_id });
  });
}

/**
 * The whitelist as stored: each entry parsed and written in its canonical form (a 400 names
 * the bad one: not an address, host bits set, or wider than `floor` without `force`),
 * duplicates dropped, in order.
 */
export function whitelistEntries(
  ips: readonly string[],
  options: { floor?: PrefixFloor; force?: boolean } = {},
): string[] {
  const entries: string[] = [];
  ips.forEach((raw, index) => {
    const parsed = parseWhitelistEntry(raw, options);
    if ('error' in parsed)
      throw badRequest(`ips.${index}: ${parsed.error}`, `ips.${index}`, 'invalid_value');
    if (!entries.includes(parsed.entry)) entries.push(parsed.entry);
  });
  return entries;
}

export function setIpWhitelist(
  store: Store,
  account_id: string,
  ips: readonly string[],
  audit: Audit,
  options: { floor?: PrefixFloor; force?: boolean } = {},
): Promise<void> {
  const entries = whitelistEntries(ips, options);
  return store.transact((tx) => {
    const account = requireAccount(tx, account_id);
    tx.set('accounts', account_id, { ...account, ip_whitelist: entries });
    audit(tx, { action: 'account.ip_whitelist', account_id, details: { ips: entries } });
  });
}

/** Turns signed /api requests on, or replaces the secret (the old one stops at once). */
export function enableSigning(
  store: Store,
  sealer: Sealer,
  account_id: string,
  audit: Audit,
): Promise<ReturnType<typeof setSigningSecret>> {
  return store.transact((tx) => {
    const account = requireAccount(tx, account_id);
    const result = setSigningSecret(tx, account_id, sealer);
    audit(tx, {
      action: account.signing ? 'account.signing_rotate' : 'account.signing_enable',
      account_id,
      details: {},
    });
    return result;
  });
}

export function disableSigning(store: Store, account_id: string, audit: Audit): Promise<void> {
  return store.transact((tx) => {
    const account = requireAccount(tx, account_id);
    if (!account.signing) return;
    clearSigningSecret(tx, account_id);
    audit(tx, { action: 'account.signing_disable', account_id, details: {} });
  });
}

/** What an operator may do to a transaction by hand (each with a reason, audited in its commit). */
export const TRANSACTION_ACTIONS = ['recheck', 'hold', 'refund', 'reverse'] as const;
export type TransactionAction = (typeof TRANSACTION_ACTIONS)[number];

/**
 * An operator's move of a transaction, through the engine's status table: `recheck` re-arms
 * the status checks of one on hold (or pending with its checks run out) and makes it pending;
 * `hold` stops a pending one for a look; `refund` gives the money of one on hold or waiting
 * for the customer's consent back to the wallet; `reverse` undoes a success (every posting it
 * made mirrored, the commission taken back). 404 unknown; 409 from a status the action does
 * not apply to. The audit record (action `transaction.<action>`, the reason, the statuses
 * before and after) is written in the move's commit.
 */
export function moveTransaction(
  store: Store,
  engine: PaymentEngine,
  txn_id: string,
  action: TransactionAction,
  reason: string,
  audit: Audit,
): Promise<PaymentTxn> {
  const txn = store.get('payment_txns', txn_id);
  if (!txn) throw notFound('no such transaction', 'transaction_not_found');
  const from = txn.status;
  const manual = {
    reason,
    audit: (tx: Tx, moved: PaymentTxn) =>
      audit(tx, {
        action: `transaction.${action}`,
        account_id: moved.account_id,
        details: { txn_id: moved.id, reason, from, to: moved.status },
      }),
  };
  switch (action) {
    case 'recheck':
      return engine.recheck(txn.id, manual);
    case 'hold':
      return engine.holdByAdmin(txn.id, manual);
    case 'refund':
      return engine.refundByAdmin(txn.id, manual);
    case 'reverse':
      return engine.reverseByAdmin(txn.id, manual);
  }
}

/** Re-arms the status checks of a transaction on hold or whose checks ran out; any other is a conflict. */
export function recheckTransaction(
  store: Store,
  engine: PaymentEngine,
  txn_id: string,
  reason = 're-check requested',
  audit: Audit = () => {},
): Promise<PaymentTxn> {
  return moveTransaction(store, engine, txn_id, 'recheck', reason, audit);
}
