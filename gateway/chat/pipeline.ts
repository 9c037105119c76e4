// The one chat pipeline every protocol runs through, step by step (each step in steps/):
// auth → rate limit → body → the protocol's validation and translation → tier → output
// limit → the worst case held → router and engine → relay or JSON answer (the protocol's
// presenters) → usage → settlement → the bill. A protocol's quirks live in its folder
// (protocols/<name>/), never here.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from '../http/errors.js';
import { StoreUnavailableError } from '../kernel/errors.js';
import type { Locals } from '../http/lean.js';
import type { EngineRequest } from '../llm/types.js';
import { countPromptTokens } from '../llm/tokens.js';
import type { AnswerMeta, Protocol } from './protocol.js';
import type { Handler } from './route.js';
import type { ChatRoom } from './room.js';
import { admit, begin } from './steps/admit.js';
import { answer } from './steps/answer.js';
import type { Call } from './steps/call.js';
import { front, type Front } from './steps/front.js';
import { hold } from './steps/hold.js';
import { capWarning, outputLimit } from './steps/output-limit.js';
import { stream } from './steps/stream.js';

/** The route handler of a protocol's requests through the pipeline. */
export const pipelineHandler =
  (protocol: Protocol): Handler =>
  (room, req, res, locals) =>
    runChat(room, req, res, locals, protocol);

/** Serves one request of `protocol`; its errors in the protocol's own terms. */
export async function runChat(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
  protocol: Protocol,
): Promise<void> {
  try {
    await pipeline(room, req, res, locals, protocol);
  } catch (error) {
    throw protocol.error && error instanceof ApiError ? protocol.error(error) : error;
  }
}

async function pipeline(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
  protocol: Protocol,
): Promise<void> {
  const started_ms = performance.now();
  const { account, key, rate, raw } = await front(room, req, locals);
  try {
    await served(room, res, locals, protocol, raw, { account, key, started_ms });
  } catch (error) {
    if (error instanceof StoreUnavailableError && error.code === 'store_unavailable')
      rate.release();
    throw error;
  }
}

async function served(
  room: ChatRoom,
  res: ServerResponse,
  locals: Locals,
  protocol: Protocol,
  raw: unknown,
  { account, key, started_ms }: Pick<Front, 'account' | 'key'> & { started_ms: number },
): Promise<void> {
  const request_id = locals.request_id;
  const body = protocol.parse(raw);
  const tier = admit(room, body.model);

  const prompt_tokens_estimate = countPromptTokens(body.messages, body.params.tools);
  const limit = outputLimit(tier, body, prompt_tokens_estimate);
  const { reservation, free_tokens, max_output_tokens } = await hold(room, {
    account_id: account.id,
    key_id: key.id,
    tier,
    request_id,
    prompt_tokens_estimate,
    max_output_tokens: limit,
    cap_field: body.cap_field,
    choices: body.choices,
  });
  const capped = capWarning(tier, body, prompt_tokens_estimate, max_output_tokens);
  if (capped) body.warnings.push(capped);

  const { signal, end } = begin(room, res, account.id, reservation, free_tokens);
  const engine_request: EngineRequest = {
    params: body.params,
    messages: body.messages,
    max_output_tokens,
    prompt_tokens_estimate,
    signal,
  };
  const meta: AnswerMeta = {
    request_id,
    model: tier.id,
    created: Math.floor(room.now_ms() / 1000),
    prompt_tokens_estimate,
    max_output_tokens,
  };
  const call: Call = {
    reservation,
    tier,
    request_id,
    started_ms,
    engine_request,
    body,
    meta,
    protocol: body.protocol,
    warnings: body.warnings,
  };
  try {
    if (body.stream) await stream(room, res, call);
    else await answer(room, res, call);
  } finally {
    end();
  }
}
