// Step 4: admission. The model id names a tier, and the gateway has room for one more
// request; once its worst case is held, the request counts in flight until it ends.
import type { ServerResponse } from 'node:http';
import { ApiError } from '../../http/errors.js';
import type { Reservation } from '../billing.js';
import { isTierId, type TierConfig } from '../config.js';
import { ModelNotFoundError } from '../refusals.js';
import type { ChatRoom } from '../room.js';
import { ClientGone, type CallSignal } from '../../llm/call-signal.js';

/** The tier a model id names, if the gateway has room for one more request. */
export function admit(room: ChatRoom, model: string): TierConfig {
  if (!isTierId(model)) throw new ModelNotFoundError(model);
  if (room.in_flight >= room.config.max_in_flight) {
    throw new ApiError(
      503,
      'overloaded',
      'the gateway is at its limit of concurrent chat requests; retry shortly',
      null,
      'api_error',
      { 'retry-after': '1' },
    );
  }
  return room.config.models[model];
}

/** Counts a held request in flight and ties an abort signal to its client's connection; end() undoes both. */
export function begin(
  room: ChatRoom,
  res: ServerResponse,
  account_id: string,
  reservation: Reservation,
  free_tokens: number,
) {
  room.in_flight++;
  if (free_tokens) room.addReservedFree(account_id, free_tokens);
  const abort = new ClientGone();
  const onClose = () => {
    if (!res.writableFinished) abort.abort();
  };
  res.on('close', onClose);
  const end = () => {
    // Settled by now (a no-op then), or cut short by an error nobody foresaw: either way no
    // reservation outlives its request.
    reservation.money.release();
    reservation.key?.release();
    res.off('close', onClose);
    room.in_flight--;
    if (free_tokens) room.addReservedFree(account_id, -free_tokens);
  };
  return { signal: abort as CallSignal, end };
}
