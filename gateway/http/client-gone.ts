// A signal that aborts when a request's client goes away before its answer is complete, for
// work that runs long on a request's behalf (reports): it stops instead of running for nobody.
// And the wait of a streamed answer for its client to take more, which ends when the client
// leaves too (a bare 'drain' never comes then).
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Why a request's work was stopped: its client closed the connection first (or stopped taking the answer). */
export class ClientGoneError extends Error {
  constructor(message = 'the client closed the connection before the answer was complete') {
    super(message);
    this.name = 'ClientGoneError';
  }
}

/**
 * Aborts (with a ClientGoneError) when the connection closes before `res` has finished. The
 * socket is watched as well as the response: a response waiting behind another on a
 * pipelined connection has no socket yet and hears no close of its own. (A request's own
 * 'close' says nothing here: it also comes once its body has been read.)
 */
export function clientGone(req: IncomingMessage, res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  const socket = req.socket;
  const done = () => {
    socket.off('close', onClose);
    res.off('close', onClose);
    res.off('finish', done);
  };
  const onClose = () => {
    done();
    if (!res.writableFinished) controller.abort(new ClientGoneError());
  };
  if (socket.destroyed) controller.abort(new ClientGoneError());
  else {
    socket.on('close', onClose);
    res.on('close', onClose);
    res.on('finish', done);
  }
  return controller.signal;
}

/**
 * Resolves true when `res` can take more, or is closed, or `signal` aborts; false when none
 * of that happened within `stall_ms` (a client that takes nothing; no bound without it).
 */
export function drained(
  res: ServerResponse,
  signal?: AbortSignal,
  stall_ms?: number,
): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (in_time: boolean) => () => {
      clearTimeout(timer);
      res.off('drain', moved);
      res.off('close', moved);
      signal?.removeEventListener('abort', moved);
      resolve(in_time);
    };
    const moved = done(true);
    const timer = stall_ms === undefined ? undefined : setTimeout(done(false), stall_ms);
    res.on('drain', moved);
    res.on('close', moved);
    signal?.addEventListener('abort', moved);
  });
}
