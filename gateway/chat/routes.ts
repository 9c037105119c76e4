// The /v1 route table: each route names its handler and the protocol it speaks. The chat
// protocols all run the one pipeline (pipeline.ts) with their own translation
// (protocols/<name>/); the other routes are a screenful each. An unknown path or method is a
// 404 in OpenAI's shape (Google's under /v1beta). Every refusal (a 4xx) is counted by protocol and code
// (aihub_chat_refusals_total); the log line carries its code and param (http/lean.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, isGeminiPath } from '../http/errors.js';
import { pathOf, type Locals } from '../http/lean.js';
import { balance } from './balance.js';
import { getModel, listModels } from './models.js';
import { runChat } from './pipeline.js';
import { chatProtocol } from './protocols/chat/route.js';
import { completionsProtocol } from './protocols/completions/route.js';
import { runEmbeddings } from './protocols/embeddings/run.js';
import {
  getGeminiModel,
  isGoogleClient,
  listGeminiModels,
  methodOf,
  runGemini,
  unknownMethod,
} from './protocols/gemini/route.js';
import { runCountTokens } from './protocols/messages/count-tokens.js';
import { messagesProtocol } from './protocols/messages/translate.js';
import { responsesProtocol } from './protocols/responses/translate.js';
import type { RefusalRoute } from './metrics.js';
import type { Protocol } from './protocol.js';
import type { ChatRoom } from './room.js';

type Handler = (
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
) => Promise<void> | void;

interface Route {
  /** The protocol the route speaks, for the refusal metric. */
  protocol: RefusalRoute;
  handle: Handler;
}

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

/** Google's Gemini API: its methods under `/v1beta/models/` (and `/v1/models/`), its model list. */
function findGemini(req: IncomingMessage, path: string): Route | null {
  if (req.method === 'POST') {
    const target = methodOf(path);
    if (target)
      return {
        protocol: 'gemini',
        handle: (room, req, res, locals) => runGemini(room, req, res, locals, target),
      };
    if (isGeminiPath(path) && path.includes(':'))
      return {
        protocol: 'gemini',
        handle: () => {
          throw unknownMethod(path);
        },
      };
    return null;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') return null;
  if (path === '/v1beta/models' || (path === '/v1/models' && isGoogleClient(req)))
    return { protocol: 'gemini', handle: listGeminiModels };
  const model = /^\/(v1beta|v1)\/models\/([^/:]+)$/.exec(path);
  if (!model || (model[1] !== 'v1beta' && !isGoogleClient(req))) return null;
  return {
    protocol: 'gemini',
    handle: (room, req, res, locals) => {
      locals.route = `/${model[1]}/models/:model`;
      return getGeminiModel(room, req, res, locals, decodeURIComponent(model[2]!));
    },
  };
}

function find(req: IncomingMessage, path: string): Route {
  const method = req.method;
  if (method === 'POST') return POST.get(path) ?? findGemini(req, path) ?? NO_ROUTE;
  if (method === 'GET' || method === 'HEAD')
    return (
      findGemini(req, path) ?? GET.get(path) ?? (path.startsWith('/v1/models/') ? MODEL : NO_ROUTE)
    );
  return NO_ROUTE;
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
