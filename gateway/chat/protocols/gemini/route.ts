// Google's Gemini API on the gateway's keys: `POST /v1beta/models/{model}:generateContent`,
// `:streamGenerateContent` (`alt=sse`: server-sent events; without it, one JSON array) and
// `:countTokens`, `GET /v1beta/models` and `/v1beta/models/{model}`; the same under `/v1/`.
// generateContent runs the one chat pipeline with this folder's translation; the key may come
// as `x-goog-api-key` or `?key=` as well as the gateway's own headers.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from '../../../http/errors.js';
import { sendJson, type Locals } from '../../../http/lean.js';
import { isTierId, listedPricing, TIER_IDS, type TierConfig } from '../../config.js';
import { runChat } from '../../pipeline.js';
import type { ChatRoom } from '../../room.js';
import { ModelNotFoundError } from '../../refusals.js';
import { authorize } from '../../steps/auth.js';
import { keyAllows } from '../../key-hold.js';
import { front } from '../../steps/front.js';
import type { Protocol } from '../../protocol.js';
import type { ProtocolRoutes, Route } from '../../route.js';
import { geminiError, googleErrorShape, isGeminiPath } from './errors.js';
import { geminiDocs } from './openapi.js';
import { countTokens, parseGenerate, type GeminiRoute } from './translate.js';
import { geminiNative } from './native.js';

const METHODS = ['generateContent', 'streamGenerateContent', 'countTokens'] as const;
type Method = (typeof METHODS)[number];

/** `/v1beta/models/{model}:{method}` (or under `/v1/`): the model and the method, or null. */
export function methodOf(path: string): { version: string; model: string; method: Method } | null {
  const match = /^\/(v1beta|v1)\/models\/([^/:]+):([A-Za-z]+)$/.exec(path);
  if (!match) return null;
  const method = METHODS.find((name) => name === match[3]);
  if (!method) return null;
  return { version: match[1]!, model: safeDecode(match[2]!), method };
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** A request that carries its key Google's way: the x-goog-api-key header or `?key=`. */
export function isGoogleClient(req: IncomingMessage): boolean {
  return req.headers['x-goog-api-key'] !== undefined || googleQueryKey(req.url) !== null;
}

/**
 * The key a Google client sends (x-goog-api-key, else `?key=`), adopted as the gateway's
 * x-api-key when the request carries neither of the gateway's own key headers, so that every
 * step (authentication, the shared log's catch-up for a new key) reads it one way.
 */
export function adoptGoogleKey(req: IncomingMessage): void {
  if (req.headers.authorization !== undefined || req.headers['x-api-key'] !== undefined) return;
  const header = req.headers['x-goog-api-key'];
  const key = typeof header === 'string' ? header.trim() : googleQueryKey(req.url);
  if (key) req.headers['x-api-key'] = key;
}

function googleQueryKey(url: string | undefined): string | null {
  const query = url?.indexOf('?') ?? -1;
  if (query === -1 || !url!.includes('key=', query)) return null;
  return new URLSearchParams(url!.slice(query + 1)).get('key');
}

function queryOf(url: string | undefined): URLSearchParams {
  const query = url?.indexOf('?') ?? -1;
  return new URLSearchParams(query === -1 ? '' : url!.slice(query + 1));
}

export async function runGemini(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
  target: { version: string; model: string; method: Method },
): Promise<void> {
  locals.route = `/${target.version}/models/:model:${target.method}`;
  if (target.method === 'countTokens') {
    try {
      const { raw } = await front(room, req, locals);
      if (!isTierId(target.model)) throw new ModelNotFoundError(target.model);
      sendJson(res, 200, countTokens(raw));
    } catch (error) {
      throw error instanceof ApiError ? geminiError(error) : error;
    }
    return;
  }
  const route: GeminiRoute = {
    model: target.model,
    stream:
      target.method === 'streamGenerateContent'
        ? queryOf(req.url).get('alt') === 'sse'
          ? 'sse'
          : 'json-array'
        : null,
  };
  const protocol: Protocol = {
    name: 'gemini',
    parse: (raw) => parseGenerate(raw, route),
    error: geminiError,
  };
  await runChat(room, req, res, locals, protocol);
}

/** `GET /v1beta/models`: the five tiers as Gemini models (one page: there are five). */
export function listGeminiModels(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
): void {
  const { key } = authorize(room, req, locals);
  sendJson(res, 200, {
    models: TIER_IDS.filter((id) => keyAllows(key, id)).map((id) =>
      geminiModel(room, room.config.models[id]),
    ),
  });
}

export function getGeminiModel(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
  id: string,
): void {
  authorize(room, req, locals);
  const name = id.startsWith('models/') ? id.slice('models/'.length) : id;
  if (!isTierId(name)) throw geminiError(new ModelNotFoundError(name));
  sendJson(res, 200, geminiModel(room, room.config.models[name]));
}

function geminiModel(room: ChatRoom, tier: TierConfig) {
  return {
    name: `models/${tier.id}`,
    baseModelId: tier.id,
    version: '1',
    displayName: `AIHub ${tier.tier} (${tier.id})`,
    description: `AIHub's ${tier.tier} tier, billed per token from the key's wallet.`,
    inputTokenLimit: tier.context_window,
    outputTokenLimit: tier.max_output_tokens,
    supportedGenerationMethods: [...METHODS],
    temperature: 1,
    maxTemperature: 2,
    topP: 1,
    pricing: listedPricing(tier, room.currency),
  };
}

/** A Gemini path with a method this gateway does not serve (embedContent, batchGenerateContent, ...). */
export function unknownMethod(path: string): ApiError {
  return new ApiError(
    404,
    'not_found',
    `no Gemini method ${path.slice(path.lastIndexOf(':') + 1, 200)}: served are ${METHODS.join(', ')}`,
  );
}

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

/** What the Gemini API adds to the route table: its paths, its key's ways in, its error shape. */
export const geminiRoutes: ProtocolRoutes = {
  name: 'gemini',
  native: geminiNative,
  prefixes: ['/v1beta/'],
  error_shape: googleErrorShape,
  adopt: adoptGoogleKey,
  find: findGemini,
  docs: geminiDocs,
};
