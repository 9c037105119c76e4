// The /v1 route table: each route names its handler and the protocol it speaks. The protocols
// (protocols/index.ts lists them) give their own paths: the chat protocols all run the one
// pipeline (pipeline.ts) with their own translation (protocols/<name>/); the other routes are
// a screenful each. An unknown path or method is a 404 in OpenAI's shape (or the shape a
// protocol gives its paths). Every refusal (a 4xx) is counted by protocol and code
// (aihub_chat_refusals_total); the log line carries its code and param (http/lean.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { addErrorShape, ApiError } from '../http/errors.js';
import { pathOf, type Locals } from '../http/lean.js';
import { balance } from './balance.js';
import { isOwnerKeysPath, KEY_ROUTE, OWNER_KEYS_ROUTE } from './key-routes.js';
import { getModel, listModels } from './models.js';
import { PROTOCOLS } from './protocols/index.js';
import type { Route } from './route.js';
import type { ChatRoom } from './room.js';

/** The protocols' own routes in GET /openapi.json, after the fixed paths' (chat/openapi.ts). */
export const protocolRouteDocs = PROTOCOLS.flatMap((protocol) => protocol.docs ?? []);

// Errors on a protocol's paths leave in its clients' shape, wherever they are answered.
for (const protocol of PROTOCOLS)
  if (protocol.error_shape) addErrorShape(protocol.name, protocol.error_shape);

/** The paths this room serves: /v1/, and those the protocols serve outside it. */
const PREFIXES = ['/v1/', ...PROTOCOLS.flatMap((protocol) => protocol.prefixes ?? [])];

/** Whether a request's URL is one of this room's (the app sends it to the lean lane). */
export function servesUrl(url: string | undefined): boolean {
  return url !== undefined && PREFIXES.some((prefix) => url.startsWith(prefix));
}

/** POST routes by exact path, as the protocols give them. */
const POST = new Map<string, Route>(
  PROTOCOLS.flatMap((protocol) =>
    Object.entries(protocol.post ?? {}).map(([path, handle]): [string, Route] => [
      path,
      { protocol: protocol.name, handle },
    ]),
  ),
);

/** GET (and HEAD) routes by exact path. */
const GET = new Map<string, Route>([
  ['/v1/models', { protocol: 'other', handle: listModels }],
  ['/v1/balance', { protocol: 'other', handle: balance }],
  ['/v1/key', KEY_ROUTE],
]);

const MODEL: Route = {
  protocol: 'other',
  handle: (room, req, res, locals) => {
    locals.route = '/v1/models/:model';
    const id = decodeURIComponent(pathOf(req.url).slice('/v1/models/'.length));
    return getModel(room, req, res, locals, id);
  },
};

const NO_ROUTE: Route = {
  protocol: 'other',
  handle: (_room, req) => {
    const path = pathOf(req.url);
    throw new ApiError(404, 'not_found', `no route for ${req.method} ${path.slice(0, 200)}`);
  },
};

/** A protocol's own route for the request, one that is no fixed path, or null. */
function findOwn(req: IncomingMessage, path: string): Route | null {
  for (const protocol of PROTOCOLS) {
    const route = protocol.find?.(req, path);
    if (route) return route;
  }
  return null;
}

function find(req: IncomingMessage, path: string): Route {
  const method = req.method;
  if (isOwnerKeysPath(path)) return OWNER_KEYS_ROUTE;
  if (method === 'POST') return POST.get(path) ?? findOwn(req, path) ?? NO_ROUTE;
  if (method === 'GET' || method === 'HEAD')
    return (
      findOwn(req, path) ?? GET.get(path) ?? (path.startsWith('/v1/models/') ? MODEL : NO_ROUTE)
    );
  return NO_ROUTE;
}

/** Sets a request up for the protocols before it is routed (a key sent a vendor's way adopted). */
export function adoptRequest(req: IncomingMessage): void {
  for (const protocol of PROTOCOLS) protocol.adopt?.(req);
}

export function routeChat(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
): Promise<void> | void {
  const route = find(req, pathOf(req.url));
  const counted = (error: unknown): never => {
    if (error instanceof ApiError && error.status >= 400 && error.status < 499)
      room.metrics.refused(route.protocol, error.code);
    throw error;
  };
  try {
    return route.handle(room, req, res, locals)?.catch(counted);
  } catch (error) {
    return counted(error);
  }
}
