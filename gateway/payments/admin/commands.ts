// The admin's payments rules, as commands the JSON admin API calls (and, through it, the
// dashboard's console): eKYC review (only a submission under review is decided), service
// activation (only after eKYC approval), the IP whitelist (each entry an address or a CIDR
// range, duplicates dropped), request signing, and re-arming a transaction's status checks
// (only while it is pending: never a blind refund). Each change is audited in its own
// commit through `audit`, which the surface supplies (who asked, from where).
import type { z } from 'zod';
import { requireAccount } from '../../accounts/accounts.js';
import { parseWhitelistEntry } from '../../accounts/ip-whitelist.js';
import { ApiError, badRequest, conflict, notFound } from '../../http/errors.js';
import type { Store, Tx } from '../../store/store.js';
import type { Sealer } from '../../util/sealed.js';
import type { PaymentEngine } from '../engine/engine.js';
import type { AuditEntry } from '../logs.js';
import type { servicesBody } from './schemas.js';
import { clearSigningSecret, setSigningSecret } from '../signing.js';
import type { KycSubmission, PaymentTxn } from '../engine/tables.js';

/** Writes the audit record of an admin change, in the change's own commit. */
export type Audit = (tx: Tx, entry: AuditEntry) => void;

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
  services: z.output<typeof servicesBody>,
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

/** The whitelist as stored: each entry parsed (a 400 names the bad one), duplicates dropped, in order. */
export function whitelistEntries(ips: readonly string[]): string[] {
  const entries: string[] = [];
  ips.forEach((raw, index) => {
    const parsed = parseWhitelistEntry(raw);
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
): Promise<void> {
  const entries = whitelistEntries(ips);
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

/** Re-arms the status checks of a transaction whose checks ran out; a final one is a conflict. */
export function recheckTransaction(
  store: Store,
  engine: PaymentEngine,
  txn_id: string,
): Promise<PaymentTxn> {
  const txn = store.get('payment_txns', txn_id);
  if (!txn) throw notFound('no such transaction', 'transaction_not_found');
  if (txn.status !== 'pending')
    throw conflict(`transaction ${txn.id} is ${txn.status} already`, 'transaction_final');
  return engine.rearm(txn.id);
}
