// The admin API of CONTRACT.md: accounts, keys, credits (idempotent on `reference`).
import { Router, type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import type { AppDeps } from '../app.js';
import { ApiError, conflict, notFound, parseWith } from '../http/errors.js';
import { FUNDING_TOPUP, InsufficientBalanceError, balanceMicros, creditWallet, debitWallet } from '../ledger/ledger.js';
import { table } from '../store/state.js';
import { microsToUnits } from '../util/money.js';
import { unitsAmountSchema } from '../util/amount-schema.js';
import { accountView, createAccount, createApiKey, keyView, requireAccount } from './accounts.js';
import { isAdminToken } from './auth.js';
import { sha256Hex } from './keys.js';

export const createAccountBody = z.strictObject({
  email: z.email('must be an email address').max(254),
  name: z.string().trim().max(200).optional(),
});
export const createKeyBody = z.strictObject({ name: z.string().trim().max(100).optional() });
export const moneyBody = z.strictObject({
  amount: unitsAmountSchema(2),
  reference: z.string().trim().min(1).max(128),
  memo: z.string().trim().max(200).optional(),
});
export const listQuery = z.object({
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  limit: z.coerce.number().int().min(1).max(500).default(50),
});
const idParam = z.string().min(1).max(100);

/** A per-address failure limit (the admin console's login limiter, shared so both doors count together). */
export interface FailureLock {
  retryAfterSeconds(key: string, now_ms: number): number;
  record(key: string, now_ms: number): void;
  reset(key: string): void;
}

/**
 * Bearer admin token check. A presented token that is wrong counts against the client's
 * address; once the address is over the limit every admin call from it, right token or
 * not, is 429 with Retry-After until the window passes (otherwise the lockout would still
 * tell a guesser when a guess was right). A request with no bearer token is a plain 401:
 * it guesses nothing.
 */
export function adminAuth(admin_token_hash: string, lock: FailureLock, now_ms: () => number) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const address = req.ip ?? req.socket.remoteAddress ?? 'unknown';
    const at_ms = now_ms();
    const wait_s = lock.retryAfterSeconds(address, at_ms);
    if (wait_s > 0) {
      next(
        new ApiError(429, 'too_many_admin_attempts', `too many wrong admin tokens from this address; try again in ${wait_s} s`, null, 'rate_limit_exceeded', {
          'retry-after': String(wait_s),
        }),
      );
      return;
    }
    if (!isAdminToken(req.headers, admin_token_hash)) {
      if (hasBearer(req.headers.authorization)) lock.record(address, at_ms);
      next(new ApiError(401, 'invalid_admin_token', 'admin routes need `Authorization: Bearer <AIHUB_ADMIN_TOKEN>`', null, 'authentication_error'));
      return;
    }
    lock.reset(address);
    next();
  };
}

function hasBearer(authorization: string | undefined): boolean {
  return typeof authorization === 'string' && /^Bearer\s+\S/i.test(authorization);
}

export function adminRouter(deps: AppDeps): Router {
  const { store, config } = deps;
  const router = Router();
  const view = (id: string) => accountView(store.state, requireAccount(store, id), config.currency);

  router.post('/accounts', async (req, res) => {
    const body = parseWith(createAccountBody, req.body ?? {});
    const account = await store.transact((tx) => createAccount(tx, body));
    res.status(201).json(view(account.id));
  });

  router.get('/accounts', async (req, res) => {
    const query = parseWith(listQuery, req.query);
    await store.transact(() => undefined);
    const all = Object.values(table(store.state, 'accounts')).sort((a, b) => a.created_at.localeCompare(b.created_at));
    const start = (query.page - 1) * query.limit;
    res.json({ object: 'list', total: all.length, page: query.page, limit: query.limit, data: all.slice(start, start + query.limit).map((a) => view(a.id)) });
  });

  router.get('/accounts/:id', async (req, res) => {
    const id = parseWith(idParam, req.params.id);
    await store.transact(() => undefined); // answer from durable state only
    const keys = [...store.indexBy('keys', 'account_id').rows(id)];
    res.json({ ...view(id), keys: keys.map(keyView) });
  });

  router.post('/accounts/:id/keys', async (req, res) => {
    const id = parseWith(idParam, req.params.id);
    const body = parseWith(createKeyBody, req.body ?? {});
    const { record, key } = await store.transact((tx) => {
      requireAccount(tx, id);
      return createApiKey(tx, id, body.name ?? '');
    });
    res.status(201).json({ ...keyView(record), key });
  });

  router.delete('/keys/:keyId', async (req, res) => {
    const key_id = parseWith(idParam, req.params.keyId);
    await store.transact((tx) => {
      const key = tx.get('keys', key_id);
      if (!key) throw notFound(`no key ${key_id}`, 'key_not_found');
      if (!key.revoked_at) tx.set('keys', key_id, { ...key, revoked_at: tx.now.toISOString() });
    });
    res.status(204).end();
  });

  /** Credit or debit once per reference; the same reference with another amount or account is a conflict. */
  const moveMoney = (direction: 'credit' | 'debit') => async (req: Request, res: Response) => {
    const id = parseWith(idParam, req.params.id);
    const body = parseWith(moneyBody, req.body ?? {});
    const idempotency_key = `admin-${direction}:${body.reference}`;
    const request_hash = sha256Hex(`${id}:${body.amount}`);
    const duplicate = await store.transact((tx) => {
      requireAccount(tx, id);
      const seen = tx.get('idempotency', idempotency_key);
      if (seen) {
        if (seen.request_hash !== request_hash) {
          throw conflict(`reference ${body.reference} was used already for another ${direction}`, 'reference_conflict', 'reference');
        }
        return true;
      }
      const memo = body.memo ?? `admin ${direction} ${body.reference}`;
      try {
        if (direction === 'credit') creditWallet(tx, { account_id: id, amount_micros: body.amount, from: FUNDING_TOPUP, memo, ref: body.reference });
        else debitWallet(tx, { account_id: id, amount_micros: body.amount, to: 'revenue:adjustment', memo, ref: body.reference });
      } catch (error) {
        if (error instanceof InsufficientBalanceError) {
          throw new ApiError(402, 'insufficient_balance', `the balance ${microsToUnits(error.balance_micros)} is lower than ${microsToUnits(error.required_micros)}`);
        }
        throw error;
      }
      tx.set('idempotency', idempotency_key, { key: idempotency_key, request_hash, status: 200, body: null, created_at: tx.now.toISOString() });
      return false;
    });
    res.json({ balance: microsToUnits(balanceMicros(store.state, id)), currency: config.currency, reference: body.reference, duplicate });
  };
  router.post('/accounts/:id/credit', moveMoney('credit'));
  router.post('/accounts/:id/debit', moveMoney('debit'));

  return router;
}
