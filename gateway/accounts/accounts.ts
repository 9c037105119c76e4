import { microsToUnits } from '../util/money.js';
import { newId } from '../util/ids.js';
import { balanceMicros } from '../ledger/ledger.js';
import type { Tx } from '../store/store.js';
import type { Account, ApiKey, State } from '../store/state.js';
import { conflict, notFound } from '../http/errors.js';
import { displayPrefix, generateApiKey, keyIdFromHash, sha256Hex } from './keys.js';

export function createAccount(tx: Tx, input: { email: string; name?: string | undefined; password_hash?: string | null }): Account {
  const email = input.email.toLowerCase();
  if (tx.get('emails', email)) throw conflict(`an account with email ${email} exists already`, 'email_taken', 'email');
  const account: Account = {
    id: newId('acc'),
    email,
    name: input.name ?? '',
    status: 'active',
    services: { ai: true, recharge: false, dmt: false, pan: false, bills: false },
    kyc_status: 'none',
    ip_whitelist: [],
    password_hash: input.password_hash ?? null,
    webhook: null,
    created_at: tx.now.toISOString(),
  };
  tx.set('accounts', account.id, account);
  tx.set('emails', email, account.id);
  return account;
}

export function requireAccount(state: { get(name: 'accounts', id: string): Account | undefined }, id: string): Account {
  const account = state.get('accounts', id);
  if (!account) throw notFound(`no account ${id}`, 'account_not_found');
  return account;
}

/** Creates a key; the plaintext is returned to be shown once and is never stored. */
export function createApiKey(tx: Tx, account_id: string, name: string): { record: ApiKey; key: string } {
  const key = generateApiKey();
  const hash = sha256Hex(key);
  const record: ApiKey = {
    id: keyIdFromHash(hash),
    account_id,
    hash,
    prefix: displayPrefix(key),
    name,
    created_at: tx.now.toISOString(),
    revoked_at: null,
  };
  tx.set('keys', record.id, record);
  return { record, key };
}

export function accountView(state: State, account: Account, currency: string) {
  return {
    id: account.id,
    email: account.email,
    name: account.name,
    status: account.status,
    services: account.services,
    kyc_status: account.kyc_status,
    ip_whitelist: account.ip_whitelist,
    request_signing: { enabled: !!account.signing, created_at: account.signing?.created_at ?? null },
    created_at: account.created_at,
    balance: microsToUnits(balanceMicros(state, account.id)),
    currency,
  };
}

export function keyView(key: ApiKey) {
  return { id: key.id, prefix: key.prefix, name: key.name, created_at: key.created_at, revoked_at: key.revoked_at };
}
