// The /v1 route table: each route names its handler and the protocol it speaks. The chat
// protocols all run the one pipeline (pipeline.ts) with their own translation
// (protocols/<name>/); the other routes are a screenful each. An unknown path or method is a
// 404 in OpenAI's shape (Google's under /v1beta). Every refusal (a 4xx) is counted by protocol and code
// (aihub_chat_refusals_total); the log line carries its code and param (http/lean.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { addErrorShape, ApiError } from '../http/errors.js';
import { pathOf, type Locals } from '../http/lean.js';
import { balance } from './balance.js';
import { isOwnerKeysPath, KEY_ROUTE, OWNER_KEYS_ROUTE } from './key-routes.js';
import { getModel, listModels } from './models.js';
import { runChat } from './pipeline.js';
import { chatProtocol } from './protocols/chat/route.js';
import { completionsProtocol } from './protocols/completions/route.js';
import { runEmbeddings } from './protocols/embeddings/run.js';
import { geminiRoutes } from './protocols/gemini/route.js';
import { runCountTokens } from './protocols/messages/count-tokens.js';
import { messagesRoutes } from './protocols/messages/errors.js';
import { messagesProtocol } from './protocols/messages/translate.js';
import { responsesProtocol } from './protocols/responses/translate.js';
import type { Protocol } from './protocol.js';
import type { ProtocolRoutes, Route } from './route.js';
import type { ChatRoom } from './room.js';

/** What the protocols add to the table beside their pipeline (protocols/<name>/). */
const PROTOCOL_ROUTES: ProtocolRoutes[] = [messagesRoutes, geminiRoutes];

/** The protocols' own routes in GET /openapi.json, after the fixed paths' (chat/openapi.ts). */
export const protocolRouteDocs = PROTOCOL_ROUTES.flatMap((protocol) => protocol.docs ?? []);

// Errors on a protocol's paths leave in its clients' shape, wherever they are answered.
for (const protocol of PROTOCOL_ROUTES)
  if (protocol.error_shape) addErrorShape(protocol.name, protocol.error_shape);

const chat = (protocol: Protocol): Route => ({
  protocol: protocol.name,
  handle: (room, req, res, locals) => runChat(room, req, res, locals, protocol),
});

/** POST routes by exact path. */
const POST = new Map<string, Route>([
  ['/v1/chat/completions', chat(chatProtocol)],
  ['/v1/responses', chat(responsesProtocol)],
  ['/v1/messages', chat(messagesProtocol)],
  ['/v1/completions', chat(completionsProtocol)],
  ['/v1/messages/count_tokens', { protocol: 'messages', handle: runCountTokens }],
  ['/v1/embeddings', { protocol: 'embeddings', handle: runEmbeddings }],
]);

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

/** A protocol's own route for the request (Gemini's `/v1beta/models/{model}:{method}`), or null. */
function findOwn(req: IncomingMessage, path: string): Route | null {
  for (const protocol of PROTOCOL_ROUTES) {
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

/** Sets a request up for the protocols before it is routed (a Google client's key adopted). */
export function adoptRequest(req: IncomingMessage): void {
  for (const protocol of PROTOCOL_ROUTES) protocol.adopt?.(req);
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
