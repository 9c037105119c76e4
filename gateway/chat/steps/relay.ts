// A chat stream relayed to the client: each upstream chunk through the protocol's stream
// presenter as it comes, the generated text kept to bill on when the upstream reports no
// usage, and the closing events (with the bill) only once the bill is settled.
import type { ServerResponse } from 'node:http';
import { countTextTokens, toolCallText } from '../../llm/tokens.js';
import type { OpenedStream } from '../../llm/router.js';
import { UpstreamError, type UpstreamChunk, type UpstreamUsage } from '../../llm/types.js';
import type { UsageStatus } from '../billing.js';
import type { SseOut, Usage } from '../protocols/types.js';
import type { ChatRoom } from '../room.js';
import { SseWriter } from '../sse.js';
import { estimated, fromUpstream, type Call } from './call.js';
import { warningHeaders, finish, xAihub } from './settle.js';
import { asUpstreamError, toApiError } from './upstream-errors.js';

/** Relays an opened chat stream through the protocol's stream presenter, then settles. */
export async function relay(
  room: ChatRoom,
  res: ServerResponse,
  call: Call,
  opened: OpenedStream,
  target: string,
): Promise<void> {
  const sse = new SseWriter(res);
  sse.open(200, warningHeaders(call));
  const presenter = call.body.streamer(call.meta);
  const generated = new Generated(call.engine_request.max_output_tokens);
  let failure: UpstreamError | null = null;

  const send = async (events: SseOut[]): Promise<void> => {
    for (const event of events) await sse.event(event.data, event.event);
  };
  const relayChunk = async (chunk: UpstreamChunk): Promise<void> => {
    generated.observe(chunk);
    await send(presenter.chunk(chunk));
  };

  try {
    await send(presenter.start());
    if (opened.first) await relayChunk(opened.first);
    for (;;) {
      const next = await opened.rest.next();
      if (next.done) break;
      await relayChunk(next.value);
    }
  } catch (error) {
    failure = asUpstreamError(error);
  } finally {
    if (failure || call.engine_request.signal.aborted)
      await opened.rest.return?.().catch(() => undefined);
  }

  const aborted = call.engine_request.signal.aborted || sse.isClosed;
  const upstream_usage = failure || aborted ? null : generated.upstream_usage;
  const usage: Usage = upstream_usage
    ? fromUpstream(upstream_usage)
    : estimated(call.engine_request.prompt_tokens_estimate, generated.tokens());
  const status: UsageStatus = aborted ? 'client_closed' : failure ? 'stream_error' : 'ok';
  const settlement = await finish(room, call, usage, status, target, true);
  if (sse.isClosed) return;

  const x_aihub = xAihub(room, call, usage, settlement, target);
  if (failure) {
    await send(presenter.fail(toApiError(failure), x_aihub));
    sse.end();
    return;
  }
  await send(presenter.finish(usage, upstream_usage, x_aihub));
  if (presenter.done_marker) await sse.done();
  sse.end();
}

/** What an upstream has streamed so far: its text (to bill on without usage) and its usage. */
class Generated {
  upstream_usage: UpstreamUsage | null = null;
  private readonly texts: string[] = [];
  private chars = 0;
  /** An upstream that streams far past the output cap is broken; stop reading rather than buffer it. */
  private readonly limit_chars: number;

  constructor(private readonly max_output_tokens: number) {
    this.limit_chars = max_output_tokens * 64 + 65_536;
  }

  observe(chunk: UpstreamChunk): void {
    if (chunk.usage) this.upstream_usage = chunk.usage;
    for (const choice of chunk.choices ?? []) {
      const delta = choice.delta;
      if (!delta) continue;
      if (typeof delta.content === 'string') this.add(delta.content);
      const tool_calls = (delta as { tool_calls?: unknown }).tool_calls;
      if (tool_calls) this.add(toolCallText(tool_calls));
    }
    if (this.chars > this.limit_chars) {
      throw new UpstreamError(
        'invalid_response',
        `the upstream streamed far more than the ${this.max_output_tokens} tokens asked for`,
      );
    }
  }

  tokens(): number {
    return countTextTokens(this.texts.join(''));
  }

  private add(text: string): void {
    this.texts.push(text);
    this.chars += text.length;
  }
}
