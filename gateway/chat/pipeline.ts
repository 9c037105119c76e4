// The one pipeline every billed /v1 request runs through, step by step (each step in steps/):
// auth → rate limit → body → the protocol's validation → tier → the worst case held → served
// (for a chat protocol: output limit, router and engine, relay or JSON answer in the
// protocol's presenters, usage; for embeddings: the router's vectors) → settlement → the bill.
// A protocol's quirks live in its folder (protocols/<name>/), never here.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from '../http/errors.js';
import { StoreUnavailableError } from '../kernel/errors.js';
import type { Locals } from '../http/lean.js';
import type { EngineRequest } from '../llm/types.js';
import type { CallSignal } from '../llm/call-signal.js';
import { countPromptTokens } from '../llm/tokens.js';
import type { Reservation } from './billing.js';
import type { TierConfig } from './config.js';
import type { AnswerMeta, ChatCall, Protocol, ProtocolName } from './protocol.js';
import type { Handler } from './route.js';
import type { ChatRoom } from './room.js';
import { admit, begin } from './steps/admit.js';
import { answer } from './steps/answer.js';
import type { Call } from './steps/call.js';
import { front } from './steps/front.js';
import { hold, type HoldRequest } from './steps/hold.js';
import { capWarning, outputLimit } from './steps/output-limit.js';
import { stream } from './steps/stream.js';
import { genAiRequest, withSpan } from '../telemetry/index.js';

/** What the hold is asked for once the tier is known (HoldRequest without who and which). */
export type Ask = Pick<
  HoldRequest,
  'prompt_tokens_estimate' | 'max_output_tokens' | 'cap_field' | 'choices'
>;

/** A request once its worst case is held, for the kind that serves it. */
export interface Held<B> {
  body: B;
  tier: TierConfig;
  reservation: Reservation;
  request_id: string;
  started_ms: number;
  /** Aborted when the client goes away. */
  signal: CallSignal;
  prompt_tokens_estimate: number;
  /** The output limit the hold covers (lowered by the free allowance, perhaps). */
  max_output_tokens: number;
}

/** A kind of billed request the pipeline serves: a chat protocol's (chatKind), embeddings'. */
export interface Kind<B> {
  readonly name: ProtocolName;
  /** Validates a request body (throwing a 400 ApiError) and translates it. */
  parse(raw: unknown): B;
  /** The tier id the request names. */
  model(body: B): string;
  /** What to hold for it on `tier`. */
  ask(tier: TierConfig, body: B): Ask;
  /** Serves it, settles its bill and answers (steps/settle.ts). */
  serve(room: ChatRoom, res: ServerResponse, held: Held<B>): Promise<void>;
  /** The kind's own status for an error (Anthropic's 529 for no upstream). */
  error?(error: ApiError): ApiError;
}

/** The route handler of a chat protocol's (or another kind's) requests through the pipeline. */
export function pipelineHandler<B>(served: Protocol | Kind<B>): Handler {
  if ('serve' in served)
    return (room, req, res, locals) => runPipeline(room, req, res, locals, served);
  const kind = chatKind(served);
  return (room, req, res, locals) => runPipeline(room, req, res, locals, kind);
}

/** Serves one request of a chat protocol; its errors in the protocol's own terms. */
export function runChat(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
  protocol: Protocol,
): Promise<void> {
  return runPipeline(room, req, res, locals, chatKind(protocol));
}

/** Serves one request of `kind`; its errors in the kind's own terms. */
export async function runPipeline<B>(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
  kind: Kind<B>,
): Promise<void> {
  try {
    await pipeline(room, req, res, locals, kind);
  } catch (error) {
    throw kind.error && error instanceof ApiError ? kind.error(error) : error;
  }
}

async function pipeline<B>(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
  kind: Kind<B>,
): Promise<void> {
  const started_ms = performance.now();
  const { account, key, rate, raw } = await front(room, req, locals);
  try {
    const request_id = locals.request_id;
    const body = kind.parse(raw);
    const tier = admit(room, kind.model(body));
    const ask = kind.ask(tier, body);
    genAiRequest(kind.name, tier.id, ask.max_output_tokens, () => contentOf(body));
    const { reservation, free_tokens, max_output_tokens } = await withSpan('aihub.hold', () =>
      hold(room, {
        ...ask,
        account_id: account.id,
        key_id: key.id,
        tier,
        request_id,
        scope: locals.scope,
      }),
    );
    const { signal, end } = begin(room, res, account.id, reservation, free_tokens);
    try {
      await kind.serve(room, res, {
        body,
        tier,
        reservation,
        request_id,
        started_ms,
        signal,
        prompt_tokens_estimate: ask.prompt_tokens_estimate,
        max_output_tokens,
      });
    } finally {
      end();
    }
  } catch (error) {
    if (error instanceof StoreUnavailableError && error.code === 'store_unavailable')
      rate.release();
    throw error;
  }
}

/** What content capture records of a request: a chat call's messages, or the body. */
function contentOf(body: unknown): unknown {
  return (body as { messages?: unknown }).messages ?? body;
}

/** A chat protocol as a kind: its translation, the output limit, the engines, its presenters. */
function chatKind(protocol: Protocol): Kind<ChatCall> {
  return {
    name: protocol.name,
    parse: (raw) => protocol.parse(raw),
    model: (body) => body.model,
    ask(tier, body) {
      const prompt_tokens_estimate = countPromptTokens(body.messages, body.params.tools);
      return {
        prompt_tokens_estimate,
        max_output_tokens: outputLimit(tier, body, prompt_tokens_estimate),
        cap_field: body.cap_field,
        choices: body.choices,
      };
    },
    serve: serveChat,
    ...(protocol.error ? { error: protocol.error } : {}),
  };
}

async function serveChat(room: ChatRoom, res: ServerResponse, held: Held<ChatCall>) {
  const { body, tier, request_id, prompt_tokens_estimate, max_output_tokens } = held;
  const capped = capWarning(tier, body, prompt_tokens_estimate, max_output_tokens);
  if (capped) body.warnings.push(capped);
  const engine_request: EngineRequest = {
    params: body.params,
    messages: body.messages,
    max_output_tokens,
    prompt_tokens_estimate,
    signal: held.signal,
  };
  const meta: AnswerMeta = {
    request_id,
    model: tier.id,
    created: Math.floor(room.now_ms() / 1000),
    prompt_tokens_estimate,
    max_output_tokens,
  };
  const call: Call = {
    reservation: held.reservation,
    tier,
    request_id,
    started_ms: held.started_ms,
    engine_request,
    body,
    meta,
    protocol: body.protocol,
    warnings: body.warnings,
  };
  if (body.stream) await stream(room, res, call);
  else await answer(room, res, call);
}
