// `GET /v1/models` and `/v1/models/:model`: the five tiers, with their prices and limits, in
// one shape both SDKs read (OpenAI's `object`/`data[].id`, Anthropic's `has_more`,
// `first_id`, `last_id` and `data[].type`).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson, type Locals } from '../http/lean.js';
import { isTierId, listedPricing, TIER_IDS, type TierConfig } from './config.js';
import type { ChatRoom } from './room.js';
import { ModelNotFoundError } from './refusals.js';
import { authorize } from './steps/auth.js';
import { assertModelAllowed, keyAllows } from './key-hold.js';

/** `created` of the model list: the day the five tiers were introduced. */
const MODELS_CREATED = 1_735_689_600;

export function listModels(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
): void {
  const { key } = authorize(room, req, locals);
  // A key limited to some tiers lists only those.
  const ids = key.models ? TIER_IDS.filter((id) => keyAllows(key, id)) : TIER_IDS;
  sendJson(res, 200, {
    object: 'list',
    data: ids.map((id) => modelEntry(room, room.config.models[id])),
    has_more: false,
    first_id: ids[0] ?? null,
    last_id: ids.at(-1) ?? null,
  });
}

export function getModel(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
  id: string,
): void {
  const { key } = authorize(room, req, locals);
  if (!isTierId(id)) throw new ModelNotFoundError(id);
  assertModelAllowed(key, id);
  sendJson(res, 200, modelEntry(room, room.config.models[id]));
}

function modelEntry(room: ChatRoom, tier: TierConfig) {
  return {
    id: tier.id,
    object: 'model',
    type: 'model',
    display_name: `AIHub ${tier.tier} (${tier.id})`,
    created_at: new Date(MODELS_CREATED * 1000).toISOString(),
    created: MODELS_CREATED,
    owned_by: 'aihub',
    tier: tier.tier,
    pricing: listedPricing(tier, room.currency),
    context_window: tier.context_window,
    max_output_tokens: tier.max_output_tokens,
    input_modalities: tier.input_modalities,
    ...(tier.daily_token_allowance !== null
      ? { daily_token_allowance: tier.daily_token_allowance }
      : {}),
  };
}
