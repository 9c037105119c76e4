// Key authentication for /api: the key, then the account's IP whitelist, then the service.
import type { NextFunction, Request, Response } from 'express';
import { authenticate } from '../accounts/auth.js';
import { ApiError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { Account, ApiKey, State } from '../store/state.js';
import type { PaymentService } from '../providers/types.js';
import { assertAddressAllowed, isAllowed, plainAddress } from '../accounts/ip-whitelist.js';
import { requestSigningOf } from './signing.js';
import { hasBody } from '../http/raw-body.js';

export function clientAddress(req: Request): string | undefined {
  return plainAddress(req.ip ?? req.socket.remoteAddress);
}

export function authorize(
  state: State,
  req: Request,
  res: Response,
  logger: Logger,
  service?: PaymentService,
  options: { body_read_later?: boolean; before_body?: boolean } = {},
): { account: Account; key: ApiKey } {
  const { account, key } = authenticate(state, req.headers);
  res.locals.account_id = account.id;
  res.locals.key_prefix = key.prefix;
  res.locals.key_id = key.id;
  // 401 unless signed (or pending the body a route reads itself). Judged from the head alone
  // (before_body) there is no body yet to check a signature against: the route checks it.
  if (account.signing && !options.before_body)
    requestSigningOf(res).begin(req, account, options.body_read_later);
  const address = clientAddress(req);
  if (!isAllowed(account.ip_whitelist, address)) {
    logger.warn({
      msg: 'request from an address outside the IP whitelist',
      account_id: account.id,
      key_prefix: key.prefix,
      ip: address,
      route: req.path,
    });
    assertAddressAllowed(account, address);
  }
  if (service && !account.services[service]) {
    throw new ApiError(
      403,
      'service_inactive',
      `the ${service} service is not active for this account; an administrator activates it after eKYC approval`,
    );
  }
  return { account, key };
}

/**
 * For a request that carries a body: the key and the IP whitelist, judged from the head
 * before any route reads the body, so that a refused caller costs no buffered body (issue
 * #13, finding 1). POST /api/register is the one route without a key; each route still
 * authorizes itself (with its service) as before.
 */
export function authorizeBeforeBody(state: () => State, logger: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (hasBody(req) && req.path !== '/register')
      authorize(state(), req, res, logger, undefined, { before_body: true });
    next();
  };
}
