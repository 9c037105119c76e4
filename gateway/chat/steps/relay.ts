// A chat stream relayed to the client: each upstream chunk through the protocol's stream
// presenter as it comes, the generated text kept to bill on when the upstream reports no
// usage, and the closing events (with the bill) only once the bill is settled. An upstream
// that streams past the output limit is stopped (output-meter.ts): the client gets the answer
// so far, ended as one cut by the limit, billed at most the limit.
import type { ServerResponse } from 'node:http';
import type { OpenedStream } from '../../llm/router.js';
import type { UpstreamChunk, UpstreamError } from '../../llm/types.js';
import type { UsageStatus } from '../billing.js';
import type { SseOut } from '../protocol.js';
import type { ChatRoom } from '../room.js';
import { SseWriter } from '../sse.js';
import { estimated, fromUpstream, type Call } from './call.js';
import { capOutput, OutputMeter, overrunWarning } from './output-meter.js';
import { warningHeaders, finish, xAihub } from './settle.js';
import { asUpstreamError, toApiError } from './upstream-errors.js';
import { genAiFinish, startSpan, streamOutput } from '../../telemetry/index.js';

/** Relays an opened chat stream through the protocol's stream presenter, then settles. */
export async function relay(
  room: ChatRoom,
  res: ServerResponse,
  call: Call,
  opened: OpenedStream,
  target: string,
): Promise<void> {
  const streaming = startSpan('aihub.stream');
  const output = streamOutput(); // (null unless content capture is on)
  const presenter = call.body.streamer(call.meta);
  const sse = new SseWriter(res, call.body.framing);
  sse.open(200, warningHeaders(call));
  const meter = new OutputMeter(call.engine_request.max_output_tokens * call.body.choices);
  let failure: UpstreamError | null = null;

  const send = async (events: SseOut[]): Promise<void> => {
    for (const event of events) await sse.event(event.data, event.event);
  };
  /** Relays one chunk; false once the upstream has passed the limit. */
  const relayChunk = async (chunk: UpstreamChunk): Promise<boolean> => {
    const over = meter.observe(chunk);
    genAiFinish(chunk.choices);
    output?.add(chunk.choices);
    await send(presenter.chunk(chunk));
    return !over;
  };

  try {
    await send(presenter.start());
    let going = opened.first ? await relayChunk(opened.first) : true;
    while (going) {
      const next = await opened.rest.next();
      if (next.done) break;
      going = await relayChunk(next.value);
    }
    if (meter.stopped) await send(presenter.chunk(meter.lengthChunk()));
  } catch (error) {
    failure = asUpstreamError(error);
  } finally {
    // Stopping reading cancels the upstream call (the engine aborts its request).
    if (failure || meter.stopped || call.engine_request.signal.aborted)
      await opened.rest.return?.().catch(() => undefined);
  }

  const aborted = call.engine_request.signal.aborted || sse.isClosed;
  const upstream_usage = failure || aborted || meter.stopped ? null : meter.upstream_usage;
  const { usage, capped } = capOutput(
    upstream_usage
      ? fromUpstream(upstream_usage)
      : estimated(call.engine_request.prompt_tokens_estimate, meter.tokens()),
    meter.limit_tokens,
  );
  // (A cap of the gateway's own estimate is its tokenizer counting more than the upstream's.)
  if (meter.stopped || (capped && upstream_usage))
    call.warnings.push(overrunWarning(meter.limit_tokens));
  const status: UsageStatus = aborted ? 'client_closed' : failure ? 'stream_error' : 'ok';
  streaming.end(failure);
  output?.end();
  const settlement = await finish(room, call, usage, status, target, true);
  if (sse.isClosed) return;

  const x_aihub = xAihub(room, call, usage, settlement, target);
  if (failure) {
    await send(presenter.fail(toApiError(failure, call.reservation.scope), x_aihub));
    sse.end();
    return;
  }
  await send(presenter.finish(usage, upstream_usage, x_aihub));
  if (presenter.done_marker) await sse.done();
  sse.end();
}
