import { microsToUnits } from '../util/money.js';
import { newId } from '../util/ids.js';
import { balanceMicros } from '../ledger/ledger.js';
import { ServiceError } from '../kernel/errors.js';
import type { TableIndex, Tx } from '../store/types.js';
import type { Account, ApiKey, State } from '../store/state.js';
import { conflict, notFound } from '../http/errors.js';
import { limitsView } from './key-limits.js';
import { displayPrefix, generateApiKey, keyIdFromHash, sha256Hex } from './keys.js';

export function createAccount(
  tx: Tx,
  input: {
    email: string;
    name?: string | undefined;
    password_hash?: string | null;
    /**
     * The payment services' codes (the payments room's list, Payments.services): each off
     * until an administrator switches it on. This room names none of them.
     */
    payment_services?: readonly string[] | undefined;
    /**
     * The new account's id, drawn before the transaction by a caller that reads index keys
     * of it in the same transaction (its keys, its sessions): an id drawn inside is new on
     * every run, so on PostgreSQL those keys would miss on every run and end in a blocking load.
     */
    id?: string;
  },
): Account {
  const email = input.email.toLowerCase();
  if (tx.get('emails', email))
    throw conflict(`an account with email ${email} exists already`, 'email_taken', 'email');
  const account: Account = {
    id: input.id ?? newId('acc'),
    email,
    name: input.name ?? '',
    status: 'active',
    services: {
      ai: true,
      ...Object.fromEntries((input.payment_services ?? []).map((code) => [code, false])),
    },
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

export function requireAccount(
  state: { get(name: 'accounts', id: string): Account | undefined },
  id: string,
): Account {
  const account = state.get('accounts', id);
  if (!account) throw notFound(`no account ${id}`, 'account_not_found');
  return account;
}

/** Active (not revoked) keys an account may hold; every surface that creates keys is held to it. */
export const MAX_ACTIVE_KEYS = 50;
/**
 * Revoked keys an account keeps (listed, and answering 401 "revoked"): creating a key deletes
 * the oldest revoked ones past this, so that creating and revoking keys in a loop does not
 * grow the live document (an account holds at most 50 active keys, this many revoked ones,
 * and those revoked since its last creation: at most 150 rows). A deleted key is unknown (401).
 */
export const MAX_REVOKED_KEYS_KEPT = 50;

/**
 * Creates a key, within the account's limit of active keys (the admin API, the dashboard
 * and registration all come here); the plaintext is returned to be shown once and is never
 * stored. `keys` is the store's index of keys by account.
 */
export function createApiKey(
  tx: Tx,
  keys: TableIndex<'keys'>,
  account_id: string,
  name: string,
  /** The key's limit fields (key-limits.ts), when it is created with any. */
  limits: Partial<ApiKey> = {},
): { record: ApiKey; key: string } {
  let active = 0;
  const revoked: ApiKey[] = [];
  for (const existing of keys.rows(account_id))
    if (!existing.revoked_at) active++;
    else revoked.push(existing);
  if (revoked.length > MAX_REVOKED_KEYS_KEPT) {
    // Oldest revocation first; revocations of one millisecond keep their creation order (the
    // index's, and sort is stable), never an order of their random ids.
    revoked.sort((a, b) => a.revoked_at!.localeCompare(b.revoked_at!));
    for (const old of revoked.slice(0, revoked.length - MAX_REVOKED_KEYS_KEPT)) {
      tx.del('keys', old.id);
      // What a limited key spent goes with it (key-limits.ts), so key_spend stays bounded by keys.
      if (tx.get('key_spend', old.id)) tx.del('key_spend', old.id);
    }
  }
  if (active >= MAX_ACTIVE_KEYS) {
    throw new ServiceError(
      'conflict',
      'too_many_keys',
      `an account can have at most ${MAX_ACTIVE_KEYS} active keys; revoke one first`,
      'name',
    );
  }
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
    ...limits,
  };
  tx.set('keys', record.id, record);
  return { record, key };
}

/**
 * Revokes a key (the admin API, the admin console and the dashboard all come here); true when
 * this call revoked it, false when it was revoked already. A key of another account than
 * `owner` (when given) is no such key.
 */
export function revokeApiKey(tx: Tx, key_id: string, owner?: string): boolean {
  const key = tx.get('keys', key_id);
  if (!key || (owner !== undefined && key.account_id !== owner))
    throw new ServiceError('not_found', 'key_not_found', `no key ${key_id}`);
  if (key.revoked_at) return false;
  tx.set('keys', key_id, { ...key, revoked_at: tx.now.toISOString() });
  return true;
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
    request_signing: {
      enabled: !!account.signing,
      created_at: account.signing?.created_at ?? null,
      // v1 (timestamp + body) is accepted from secrets made before v2, until payments.signing.v1_until.
      schemes: !account.signing ? [] : account.signing.v2_only ? ['v2'] : ['v1', 'v2'],
    },
    created_at: account.created_at,
    balance: microsToUnits(balanceMicros(state, account.id)),
    currency,
  };
}

export function keyView(key: ApiKey) {
  return {
    id: key.id,
    prefix: key.prefix,
    name: key.name,
    created_at: key.created_at,
    revoked_at: key.revoked_at,
    ...limitsView(key),
  };
}
