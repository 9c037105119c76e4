// The admin API of CONTRACT.md: accounts, keys, credits (idempotent on `reference`).
import { Router, type NextFunction, type Request, type Response } from 'express';
import type { RoomDeps } from '../deps.js';
import { ApiError, parseWith } from '../http/errors.js';
import { balanceMicros } from '../ledger/ledger.js';
import { microsToUnits } from '../util/money.js';
import { accountView, createAccount, keyView, requireAccount, revokeApiKey } from './accounts.js';
import { adjustWallet } from './adjustments.js';
import { isAdminToken } from './auth.js';
import { keyAdminRouter } from './key-admin.js';
import { createAccountBody, idParam, listQuery, moneyBody } from './schemas.js';

/** A per-address failure limit (the admin console's login limiter, shared so both doors count together). */
export interface FailureLock {
  retryAfterSeconds(key: string, now_ms: number): number;
  /** Takes an attempt's slot before the check; `release` gives it back (see RateLimiter.claim). */
  claim(key: string, now_ms: number): { ok: boolean; retry_after_s: number; release(): void };
  reset(key: string): void;
}

/**
 * Bearer admin token check. A presented token that is wrong counts against the client's
 * address (its slot is taken before the comparison and given back when the token is right);
 * once the address is over the limit every admin call from it, right token or not, is 429
 * with Retry-After until the window passes (otherwise the lockout would still tell a guesser
 * when a guess was right). A request with no bearer token is a plain 401: it guesses nothing.
 */
export function adminAuth(admin_token_hash: string, lock: FailureLock, now_ms: () => number) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const address = req.ip ?? req.socket.remoteAddress ?? 'unknown';
    const at_ms = now_ms();
    // A presented token takes its slot before it is compared; without one nothing is guessed.
    const slot = hasBearer(req.headers.authorization) ? lock.claim(address, at_ms) : null;
    const wait_s = slot ? slot.retry_after_s : lock.retryAfterSeconds(address, at_ms);
    if (wait_s > 0) {
      next(
        new ApiError(
          429,
          'too_many_admin_attempts',
          `too many wrong admin tokens from this address; try again in ${wait_s} s`,
          null,
          'rate_limit_exceeded',
          {
            'retry-after': String(wait_s),
          },
        ),
      );
      return;
    }
    if (!isAdminToken(req.headers, admin_token_hash)) {
      next(
        new ApiError(
          401,
          'invalid_admin_token',
          'admin routes need `Authorization: Bearer <AIHUB_ADMIN_TOKEN>`',
          null,
          'authentication_error',
        ),
      );
      return;
    }
    lock.reset(address);
    next();
  };
}

function hasBearer(authorization: string | undefined): boolean {
  return typeof authorization === 'string' && /^Bearer\s+\S/i.test(authorization);
}

export function adminRouter(deps: RoomDeps, payment_services: readonly string[]): Router {
  const { store, config } = deps;
  const router = Router();
  // Read through store.read: on PostgreSQL a row the cache lacks is loaded without stopping the
  // event loop (a synchronous read of a missing row waits for the blocking worker, whose first
  // start parses the whole bundle: 0.7 to 1.7 s of a stalled gateway on a loaded machine).
  const view = (id: string) =>
    store.read((state) => accountView(state, requireAccount(store, id), config.currency));

  router.post('/accounts', async (req, res) => {
    const body = parseWith(createAccountBody, req.body ?? {});
    const account = await store.transact((tx) => createAccount(tx, { ...body, payment_services }));
    res.status(201).json(await view(account.id));
  });

  router.get('/accounts', async (req, res) => {
    const query = parseWith(listQuery, req.query);
    // Oldest first, in the order the accounts were created (committed): the page is read
    // from the store's row order, never by sorting every account.
    const [accounts, total] = await Promise.all([
      store.page('accounts', { offset: (query.page - 1) * query.limit, limit: query.limit }),
      store.count('accounts'),
    ]);
    const data = await store.read(
      (s) => accounts.map((account) => accountView(s, account, config.currency)),
      { fresh: true },
    );
    res.json({
      object: 'list',
      total,
      page: query.page,
      limit: query.limit,
      data,
    });
  });

  router.get('/accounts/:id', async (req, res) => {
    const id = parseWith(idParam, req.params.id);
    const keys = await store.list('keys', 'account_id', id); // durable state only
    res.json({ ...(await view(id)), keys: keys.map(keyView) });
  });

  router.use(keyAdminRouter(deps));

  router.delete('/keys/:keyId', async (req, res) => {
    const key_id = parseWith(idParam, req.params.keyId);
    await store.transact((tx) => revokeApiKey(tx, key_id));
    res.status(204).end();
  });

  /** Credit or debit once per reference; the same reference with another amount or account is a conflict. */
  const moveMoney = (direction: 'credit' | 'debit') => async (req: Request, res: Response) => {
    const id = parseWith(idParam, req.params.id);
    const body = parseWith(moneyBody, req.body ?? {});
    const duplicate = await store.transact((tx) =>
      adjustWallet(tx, { direction, account_id: id, ...body }),
    );
    res.json({
      balance: microsToUnits(balanceMicros(store.state, id)),
      currency: config.currency,
      reference: body.reference,
      duplicate,
    });
  };
  router.post('/accounts/:id/credit', moveMoney('credit'));
  router.post('/accounts/:id/debit', moveMoney('debit'));

  return router;
}
