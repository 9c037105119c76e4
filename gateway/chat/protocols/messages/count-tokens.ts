// `POST /v1/messages/count_tokens`: free, but behind the same key and rate limit as a request.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from '../../../http/errors.js';
import { sendJson, type Locals } from '../../../http/lean.js';
import { isTierId } from '../../config.js';
import type { ChatRoom } from '../../room.js';
import { ModelNotFoundError } from '../../refusals.js';
import { front } from '../../steps/front.js';
import { anthropicError, countTokens } from './translate.js';

export async function runCountTokens(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
): Promise<void> {
  try {
    const { raw } = await front(room, req, locals);
    const model = (raw as { model?: unknown } | null)?.model;
    if (typeof model === 'string' && !isTierId(model)) throw new ModelNotFoundError(model);
    sendJson(res, 200, countTokens(raw));
  } catch (error) {
    throw error instanceof ApiError ? anthropicError(error) : error;
  }
}
