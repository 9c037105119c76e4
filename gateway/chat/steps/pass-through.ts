// Pass-through: a tier whose target speaks the client's protocol natively (`protocols` in the
// target's config) gets the request as it came (the model and output cap replaced) and its
// answer goes back as sent, with our model id and bill (chat/native.ts reads and rewrites
// it); a chat target in the same tier still answers through the translation.
import type { ServerResponse } from 'node:http';
import type { OpenedStream } from '../../llm/router.js';
import {
  UpstreamError,
  type NativeAnswer,
  type NativeRequest,
  type UpstreamCompletion,
} from '../../llm/types.js';
import { dialectOf, NativeStream } from '../native.js';
import type { ChatRoom } from '../room.js';
import { SseWriter } from '../sse.js';
import type { Call } from './call.js';
import { capOutput, overrunWarning } from './output-meter.js';
import { relay } from './relay.js';
import { warningHeaders, finish, unroutedCall, xAihub } from './settle.js';
import { asUpstreamError, toApiError } from './upstream-errors.js';
import { genAiStreamedText, startSpan } from '../../telemetry/index.js';

/** The pass-through request, when a target of this tier speaks the client's protocol natively. */
export function nativeRequest(room: ChatRoom, call: Call, stream: boolean): NativeRequest | null {
  const protocol = call.protocol;
  const dialect = dialectOf(call.body);
  if (
    !dialect ||
    !call.tier.targets.some((target) => room.engines.get(target)?.protocols?.has(protocol))
  )
    return null;
  return {
    protocol,
    body: dialect.body(call.body.original, call.engine_request.max_output_tokens),
    stream,
    signal: call.engine_request.signal,
    address: dialect.address,
  };
}

/** Routes a stream request: a native target's stream, or a chat target's opened stream. */
async function openNative(room: ChatRoom, call: Call, native: NativeRequest) {
  try {
    return await room.router.each<{ native: NativeAnswer } | { chat: OpenedStream }>(
      call.tier.targets,
      native,
      async (engine) => {
        if (engine.native && engine.protocols?.has(native.protocol)) {
          const answer = await engine.native(native);
          if (answer.kind !== 'stream')
            throw new UpstreamError(
              'invalid_response',
              'the upstream answered a stream request with JSON',
            );
          return { native: answer };
        }
        const iterator = engine.stream(call.engine_request)[Symbol.asyncIterator]();
        const first = await iterator.next();
        return { chat: { first: first.done ? null : first.value, rest: iterator } };
      },
    );
  } catch (error) {
    throw await unroutedCall(room, call, true, error);
  }
}

/** A native stream, relayed as the upstream sent it; a chat target in the same tier is translated as usual. */
export async function streamNative(
  room: ChatRoom,
  res: ServerResponse,
  call: Call,
  native: NativeRequest,
): Promise<void> {
  const routed = await openNative(room, call, native);
  if ('chat' in routed.value) return relay(room, res, call, routed.value.chat, routed.target);
  const value = routed.value.native as Extract<NativeAnswer, { kind: 'stream' }>;
  const streaming = startSpan('aihub.stream');
  const sse = new SseWriter(res, call.body.framing);
  sse.open(200, warningHeaders(call));
  const dialect = dialectOf(call.body)!;
  const passed = new NativeStream(dialect, call.tier.id);
  let failure: UpstreamError | null = null;
  try {
    if (value.first)
      for (const event of passed.push(value.first)) await sse.event(event.data, event.event);
    for (;;) {
      const next = await value.rest.next();
      if (next.done) break;
      for (const event of passed.push(next.value)) await sse.event(event.data, event.event);
    }
  } catch (error) {
    failure = asUpstreamError(error);
  } finally {
    if (failure || call.engine_request.signal.aborted)
      await value.rest.return?.().catch(() => undefined);
  }
  const aborted = call.engine_request.signal.aborted || sse.isClosed;
  const limit_tokens = call.engine_request.max_output_tokens * call.body.choices;
  const { usage, capped } = capOutput(
    passed.billed(call.engine_request.prompt_tokens_estimate),
    limit_tokens,
  );
  if (capped && !usage.estimated) call.warnings.push(overrunWarning(limit_tokens));
  streaming.end(failure);
  genAiStreamedText(() => passed.text());
  const settlement = await finish(
    room,
    call,
    usage,
    aborted ? 'client_closed' : failure ? 'stream_error' : 'ok',
    routed.target,
    true,
  );
  if (sse.isClosed) return;
  const x_aihub = xAihub(room, call, usage, settlement, routed.target);
  const events = failure
    ? call.body.streamer(call.meta).fail(toApiError(failure, call.reservation.scope), x_aihub)
    : passed.finish(x_aihub);
  for (const event of events) await sse.event(event.data, event.event);
  if (dialect.done_marker && !failure) await sse.done();
  sse.end();
}

/** A JSON request a target of its tier speaks natively: its answer as sent, or a chat target's completion. */
export async function completeNative(
  room: ChatRoom,
  call: Call,
  native: NativeRequest,
): Promise<{
  completion: UpstreamCompletion;
  target: string;
  native_body: Record<string, unknown> | null;
}> {
  const routed = await room.router.each<{ native: NativeAnswer } | { chat: UpstreamCompletion }>(
    call.tier.targets,
    native,
    async (engine) => {
      if (!engine.native || !engine.protocols?.has(native.protocol))
        return { chat: await engine.complete(call.engine_request) };
      const answer = await engine.native(native);
      if (answer.kind !== 'json')
        throw new UpstreamError(
          'invalid_response',
          'the upstream answered a JSON request with a stream',
        );
      return { native: answer };
    },
  );
  const value = routed.value;
  if ('native' in value) {
    const native_body = (value.native as { body: Record<string, unknown> }).body;
    const completion = { choices: [] } as unknown as UpstreamCompletion;
    return { completion, target: routed.target, native_body };
  }
  return { completion: value.chat, target: routed.target, native_body: null };
}
