// Key authentication for /api: the key, then the account's IP whitelist, then the service.
import type { Request, Response } from 'express';
import { authenticate } from '../accounts/auth.js';
import { ApiError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { Account, ApiKey, State } from '../store/state.js';
import type { PaymentService } from '../providers/types.js';
import { isAllowed } from './ip.js';
import { requestSigningOf } from './signing.js';

export function clientAddress(req: Request): string | undefined {
  const address = req.ip ?? req.socket.remoteAddress;
  if (address?.startsWith('::ffff:') && /^\d+\.\d+\.\d+\.\d+$/.test(address.slice(7))) return address.slice(7);
  return address;
}

export function authorize(
  state: State,
  req: Request,
  res: Response,
  logger: Logger,
  service?: PaymentService,
  options: { body_read_later?: boolean } = {},
): { account: Account; key: ApiKey } {
  const { account, key } = authenticate(state, req.headers);
  res.locals.account_id = account.id;
  res.locals.key_prefix = key.prefix;
  res.locals.key_id = key.id;
  if (account.signing) requestSigningOf(res).begin(req, account, options.body_read_later); // 401 unless signed (or pending the body a route reads itself)
  const address = clientAddress(req);
  if (!isAllowed(account.ip_whitelist, address)) {
    logger.warn({ msg: 'request from an address outside the IP whitelist', account_id: account.id, key_prefix: key.prefix, ip: address, route: req.path });
    throw new ApiError(403, 'ip_not_allowed', `requests from ${address ?? 'this address'} are not allowed for this account (IP whitelist)`);
  }
  if (service && !account.services[service]) {
    throw new ApiError(403, 'service_inactive', `the ${service} service is not active for this account; an administrator activates it after eKYC approval`);
  }
  return { account, key };
}
