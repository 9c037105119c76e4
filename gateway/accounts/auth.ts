import type { IncomingHttpHeaders } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Store } from '../store/types.js';
import type { Account, ApiKey, State } from '../store/state.js';
import { table } from '../store/state.js';
import { ApiError } from '../http/errors.js';
import { isExpired } from './key-limits.js';
import { keyIdFromHash, matchesHash, sha256Hex } from './keys.js';

/** The key from `Authorization: Bearer <key>` or `x-api-key: <key>` (header names are case-insensitive). */
export function extractApiKey(headers: IncomingHttpHeaders): string | undefined {
  const authorization = headers.authorization;
  if (typeof authorization === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match) return match[1];
  }
  const header = headers['x-api-key'];
  if (typeof header === 'string' && header.trim()) return header.trim();
  return undefined;
}

export type KeyLookup =
  | { ok: true; account: Account; key: ApiKey }
  | { ok: false; reason: 'unknown' | 'revoked' | 'account_disabled' };

/** O(1): the key's id is derived from its hash. */
export function findApiKey(state: State, raw_key: string): KeyLookup {
  if (raw_key.length > 256) return { ok: false, reason: 'unknown' };
  const hash = sha256Hex(raw_key);
  const key = table(state, 'keys')[keyIdFromHash(hash)];
  if (!key || key.hash !== hash) return { ok: false, reason: 'unknown' };
  if (key.revoked_at) return { ok: false, reason: 'revoked' };
  const account = table(state, 'accounts')[key.account_id];
  if (!account) return { ok: false, reason: 'unknown' };
  if (account.status !== 'active') return { ok: false, reason: 'account_disabled' };
  return { ok: true, account, key };
}

/**
 * A key this replica does not know (yet). With the PostgreSQL store another gateway may have
 * created it a moment ago: the caller catches up with the shared log once before refusing it.
 */
export function isUnknownKey(state: State, headers: IncomingHttpHeaders): boolean {
  const raw = extractApiKey(headers);
  if (!raw) return false;
  const found = findApiKey(state, raw);
  return !found.ok && found.reason === 'unknown';
}

/** Express: a request whose key this replica does not know yet waits for the shared log first (PostgreSQL store only). */
export function catchUpForUnknownKey(store: Store) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const loading = knownKeyLoaded(store, req.headers);
    if (!loading) return next();
    loading.then(() => next(), next);
  };
}

/**
 * The request's key and account, loaded before the synchronous authentication reads them
 * (`Store.preload`; null: nothing to load, all in memory). On PostgreSQL a read that missed
 * the gateway's cache would stop the event loop for a blocking load (the first request of
 * every key on a gateway); a key still unknown waits for this gateway's commits in flight
 * once (one made a moment ago through it).
 */
export function knownKeyLoaded(store: Store, headers: IncomingHttpHeaders): Promise<void> | null {
  const unknown = store.preload((state) => isUnknownKey(state, headers));
  return unknown && unknown.then((is_unknown) => (is_unknown ? store.readDurable() : undefined));
}

/** Authenticates a request by API key or throws the 401/403 ApiError for its surface. */
export function authenticate(
  state: State,
  headers: IncomingHttpHeaders,
  now_ms: number = Date.now(),
): { account: Account; key: ApiKey } {
  const raw = extractApiKey(headers);
  if (!raw) {
    throw new ApiError(
      401,
      'invalid_api_key',
      'no API key: send it as `Authorization: Bearer <key>` or `x-api-key: <key>`',
      null,
      'invalid_request_error',
    );
  }
  const found = findApiKey(state, raw);
  if (found.ok) {
    if (isExpired(found.key, now_ms))
      throw new ApiError(
        401,
        'key_expired',
        `this API key expired at ${found.key.expires_at}; ask the account's owner for a new one or a later expiry`,
        null,
        'invalid_request_error',
      );
    return found;
  }
  if (found.reason === 'revoked')
    throw new ApiError(
      401,
      'invalid_api_key',
      'this API key has been revoked',
      null,
      'invalid_request_error',
    );
  if (found.reason === 'account_disabled')
    throw new ApiError(
      403,
      'account_disabled',
      'the account of this API key is disabled',
      null,
      'permission_error',
    );
  throw new ApiError(
    401,
    'invalid_api_key',
    'incorrect API key provided',
    null,
    'invalid_request_error',
  );
}

/** Admin bearer token, compared in constant time against its stored hash. */
export function isAdminToken(headers: IncomingHttpHeaders, admin_token_hash: string): boolean {
  const authorization = headers.authorization;
  if (typeof authorization !== 'string') return false;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return !!match && matchesHash(match[1]!, admin_token_hash);
}
