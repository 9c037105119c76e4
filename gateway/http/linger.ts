// Lingering close (as Apache's `lingering_close` and nginx's `lingering_time`). When the
// gateway answers a request before reading its body (a 409 or 413 decided from the head, a
// key refused, a connection past a cap) and the connection closes after the answer, Node
// ends the socket and destroys it as soon as the answer is written. Whatever of the body was
// still on its way then reaches a closed socket, or sits unread in its receive buffer when it
// closes, and the kernel answers with a reset: a client that had not yet read the answer
// loses it, and sees ECONNRESET instead of the 409 that told it why (CI caught one in eight
// eKYC uploads refused that way). So a connection that closes under an unread body first
// ends its side (the answer and a FIN go out), then keeps reading and discarding what the
// client still sends, and closes when the client closes, after LINGER_IDLE_MS without data,
// or after LINGER_MAX_MS in all, whichever comes first: bounded in time, never buffered.
import type { IncomingMessage, RequestListener } from 'node:http';
import type { Socket } from 'node:net';

/** A lingering connection that receives nothing for this long is closed. */
export const LINGER_IDLE_MS = 2_000;
/** A lingering connection is closed after this long, whatever it still sends. */
export const LINGER_MAX_MS = 5_000;

/** The request each connection is serving now (the last one whose head it sent). */
const current = new WeakMap<Socket, IncomingMessage>();

/** Wraps the request listener so that every connection closes with a linger under an unread body. */
export function lingerOnClose(handler: RequestListener): RequestListener {
  return (req, res) => {
    const socket = req.socket;
    if (!current.has(socket)) lingerable(socket);
    current.set(socket, req);
    handler(req, res);
  };
}

/** The connections closing with a linger now. */
const lingering = new WeakSet<Socket>();

/**
 * Replaces the socket's destroySoon (what Node's server calls once the last answer of a
 * connection is written, and what connections.ts calls after a refusal) with a lingering one
 * when the request being answered has not sent its whole body.
 */
function lingerable(socket: Socket): void {
  const destroySoon = socket.destroySoon.bind(socket);
  socket.destroySoon = function lingeringDestroySoon(): void {
    if (lingering.has(socket)) return; // already closing (Node and a refusal both ask)
    const req = current.get(socket);
    if (!req || req.complete || socket.destroyed) {
      destroySoon();
      return;
    }
    lingering.add(socket);
    const close = () => socket.destroy();
    const deadline = setTimeout(close, LINGER_MAX_MS);
    deadline.unref();
    socket.once('close', () => clearTimeout(deadline));
    socket.setTimeout(LINGER_IDLE_MS, close);
    // Node's server has already told this request to discard the rest of its body: the socket
    // keeps flowing, so what the client still sends is read and dropped, not left unread.
    socket.resume();
    socket.end(); // the answer, then FIN; the socket closes itself once the client ends too
  };
}
