// Step 1: who is asking. The key, then the account's IP whitelist (it binds every request a
// key makes), then the AI service: all from the head, before a byte of the body is read.
import type { IncomingMessage } from 'node:http';
import { authenticate } from '../../accounts/auth.js';
import { assertAddressAllowed, isAllowed } from '../../accounts/ip-whitelist.js';
import { ApiError } from '../../http/errors.js';
import type { Locals } from '../../http/lean.js';
import type { ChatRoom } from '../room.js';

export function authorize(room: ChatRoom, req: IncomingMessage, locals: Locals) {
  const found = authenticate(room.deps.store.state, req.headers, room.now_ms());
  locals.account_id = found.account.id;
  if (found.account.ip_whitelist.length > 0) {
    const address = room.client_address(req);
    if (!isAllowed(found.account.ip_whitelist, address)) {
      room.deps.logger.warn({
        msg: 'request from an address outside the IP whitelist',
        account_id: found.account.id,
        key_prefix: found.key.prefix,
        ip: address,
        route: locals.route,
      });
      assertAddressAllowed(found.account, address);
    }
  }
  if (!found.account.services.ai)
    throw new ApiError(
      403,
      'service_inactive',
      'the AI service is not active for this account',
      null,
      'permission_error',
    );
  return found;
}
