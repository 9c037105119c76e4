// The /v1 route table: each route names its handler. The chat protocols all run the one
// pipeline (pipeline.ts) with their own translation (protocols/<name>/); the other routes
// are a screenful each. An unknown path or method is a 404 in OpenAI's shape.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from '../http/errors.js';
import { pathOf, type Locals } from '../http/lean.js';
import { balance } from './balance.js';
import { getModel, listModels } from './models.js';
import { runChat } from './pipeline.js';
import { chatProtocol } from './protocols/chat/route.js';
import { completionsProtocol } from './protocols/completions/route.js';
import { runEmbeddings } from './protocols/embeddings/run.js';
import { runCountTokens } from './protocols/messages/count-tokens.js';
import { messagesProtocol } from './protocols/messages/translate.js';
import { responsesProtocol } from './protocols/responses/translate.js';
import type { Protocol } from './protocols/types.js';
import type { ChatRoom } from './room.js';

type Handler = (
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
) => Promise<void> | void;

const chat =
  (protocol: Protocol): Handler =>
  (room, req, res, locals) =>
    runChat(room, req, res, locals, protocol);

/** POST routes by exact path. */
const POST = new Map<string, Handler>([
  ['/v1/chat/completions', chat(chatProtocol)],
  ['/v1/responses', chat(responsesProtocol)],
  ['/v1/messages', chat(messagesProtocol)],
  ['/v1/completions', chat(completionsProtocol)],
  ['/v1/messages/count_tokens', runCountTokens],
  ['/v1/embeddings', runEmbeddings],
]);

/** GET (and HEAD) routes by exact path. */
const GET = new Map<string, Handler>([
  ['/v1/models', listModels],
  ['/v1/balance', balance],
]);

export function routeChat(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
): Promise<void> | void {
  const path = pathOf(req.url);
  if (req.method === 'POST') {
    const handler = POST.get(path);
    if (handler) return handler(room, req, res, locals);
  }
  if (req.method === 'GET' || req.method === 'HEAD') {
    const handler = GET.get(path);
    if (handler) return handler(room, req, res, locals);
    if (path.startsWith('/v1/models/')) {
      locals.route = '/v1/models/:model';
      const id = decodeURIComponent(path.slice('/v1/models/'.length));
      return getModel(room, req, res, locals, id);
    }
  }
  throw new ApiError(404, 'not_found', `no route for ${req.method} ${path.slice(0, 200)}`);
}
