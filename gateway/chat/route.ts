// What the /v1 route table (routes.ts) is made of: a route's handler, and what a protocol adds
// to the table beside the pipeline's Protocol (protocol.ts): its paths, its error shape, its
// routes that are no fixed path, a request set up before routing. A protocol's folder gives
// these, so that nothing outside it knows its paths or its shapes.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorShape } from '../http/errors.js';
import type { RouteDoc } from '../http/openapi.js';
import type { Locals } from '../http/lean.js';
import type { RefusalRoute } from './metrics.js';
import type { NativeDialect, ProtocolName } from './protocol.js';
import type { ChatRoom } from './room.js';

export type Handler = (
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
) => Promise<void> | void;

export interface Route {
  /** The protocol the route speaks, for the refusal metric. */
  protocol: RefusalRoute;
  handle: Handler;
}

/**
 * A /v1 protocol as the route table knows it: what its folder (protocols/<name>/) gives, and
 * chat/protocols/index.ts lists. The pipeline's part of it is a Protocol (protocol.ts).
 */
export interface ProtocolRoutes {
  readonly name: ProtocolName;
  /** Its POST routes by exact path. */
  readonly post?: Readonly<Record<string, Handler>>;
  /** How a target that speaks it natively is spoken to (`protocols` in a target's config), if one can. */
  readonly native?: NativeDialect;
  /** The paths it serves outside /v1/ (a vendor's own version prefix), which the app sends to this room. */
  readonly prefixes?: readonly string[];
  /** The shape its clients read errors in, on its paths (http/errors.ts answers them in it). */
  readonly error_shape?: ErrorShape;
  /** Sets a request up before it is routed (a key sent its clients' way, adopted as the gateway's). */
  adopt?(req: IncomingMessage): void;
  /** Its routes that are no fixed path: the one a request is for, or null when none is. */
  find?(req: IncomingMessage, path: string): Route | null;
  /** Those routes in GET /openapi.json. */
  readonly docs?: RouteDoc[];
}

/** What the docs of every non-streamed billed route say of its headers. */
export const HEADERS_NOTE =
  'headers x-aihub-cost, x-aihub-balance and x-aihub-request-id on every non-streamed billed answer';

/** What every /v1 route's doc says of itself. */
export const V1_DOC = { tag: 'chat', auth: 'api_key' } as const;

/** What every billed /v1 protocol may answer besides its success. */
export const BILLED_ERRORS: Record<number, string> = {
  402: 'insufficient_balance: the wallet cannot cover the worst case; top up at /wallet?amount=<shortfall> (named in the message, x_aihub.topup_url and the x-aihub-topup-url header)',
  403: "account or key disabled, or the caller outside the account's IP whitelist",
  404: 'model_not_found',
  429: 'rate_limit_exceeded (requests per minute, or the free tier daily allowance), with Retry-After',
  502: 'every upstream failed',
  503: 'no upstream available',
  504: 'upstream timed out',
};
