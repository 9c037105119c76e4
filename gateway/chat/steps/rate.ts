// Step 2: the per-key rate limit (this gateway's share of it, with several on one database).
import { ApiError } from '../../http/errors.js';
import type { ChatRoom } from '../room.js';

/**
 * Spends a token of the key's bucket; the answer gives it back (`release`) when the store
 * refused the request (a chat the database could not serve does not count against the key:
 * during an outage every chat would otherwise spend it and answer 429 in the middle of it).
 */
export function takeRate(room: ChatRoom, key_id: string): { release(): void } {
  const { share, gateways } = room.rateShare();
  room.limiter.setMax(share);
  const rate = room.limiter.claim(key_id);
  if (rate.ok) return rate;
  const of_it =
    gateways > 1 ? ` (this gateway's share: ${share}, one of ${gateways} gateways)` : '';
  throw new ApiError(
    429,
    'rate_limit_exceeded',
    `rate limit of ${room.config.rate_limit.requests_per_minute} requests per minute${of_it} reached for this key; retry after ${rate.retry_after_s} s`,
    null,
    'rate_limit_exceeded',
    {
      'retry-after': String(rate.retry_after_s),
    },
  );
}
