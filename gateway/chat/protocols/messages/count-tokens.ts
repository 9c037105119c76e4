// `POST /v1/messages/count_tokens`: free, but behind the same key and rate limit as a request.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson, type Locals } from '../../../http/lean.js';
import { isTierId } from '../../config.js';
import type { ChatRoom } from '../../room.js';
import { modelNotFound } from '../../steps/admit.js';
import { authorize } from '../../steps/auth.js';
import { readJson } from '../../steps/body.js';
import { takeRate } from '../../steps/rate.js';
import { countTokens } from './translate.js';

export async function runCountTokens(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
): Promise<void> {
  const { key } = authorize(room, req, locals);
  takeRate(room, key.id);
  const raw = await readJson(req, room.config.body_limit_bytes);
  const model = (raw as { model?: unknown } | null)?.model;
  if (typeof model === 'string' && !isTierId(model)) throw modelNotFound(model);
  sendJson(res, 200, countTokens(raw));
}
