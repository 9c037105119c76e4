// What one request carries from step to step once it is held, and the usage it is billed on.
import type { EngineRequest, UpstreamUsage } from '../../llm/types.js';
import type { Reservation } from '../billing.js';
import { detail } from '../native.js';
import type { TierConfig } from '../config.js';
import type { AnswerMeta, ChatCall, ProtocolName, Usage } from '../protocol.js';

/** What settling a request needs. */
export interface Settling {
  reservation: Reservation;
  tier: TierConfig;
  request_id: string;
  started_ms: number;
  protocol: ProtocolName;
  /** What the gateway changed in the request (ChatCall.warnings). */
  warnings: readonly string[];
}

/** A chat call on its way to the engines: the protocol's translation, the engine request, what the presenters know. */
export interface Call extends Settling {
  /** The translation's warnings (the same array as body.warnings), and the pipeline's. */
  warnings: string[];
  engine_request: EngineRequest;
  body: ChatCall;
  meta: AnswerMeta;
}

export const ZERO: Usage = {
  prompt_tokens: 0,
  completion_tokens: 0,
  cached_tokens: 0,
  reasoning_tokens: 0,
  estimated: false,
};

/** Usage counted by the gateway's tokenizer, for an upstream that reported none. */
export function estimated(prompt_tokens: number, completion_tokens: number): Usage {
  return {
    prompt_tokens,
    completion_tokens,
    cached_tokens: 0,
    reasoning_tokens: 0,
    estimated: true,
  };
}

/** The usage an upstream reported, as billed. */
export function fromUpstream(usage: UpstreamUsage): Usage {
  return {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    cached_tokens: detail(usage.prompt_tokens_details, 'cached_tokens', usage.prompt_tokens),
    reasoning_tokens: detail(
      usage.completion_tokens_details,
      'reasoning_tokens',
      usage.completion_tokens,
    ),
    estimated: false,
  };
}
