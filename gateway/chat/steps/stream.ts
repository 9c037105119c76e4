// A streamed answer: routed to a target (natively, when one of the tier's speaks the
// client's protocol), then relayed event by event.
import type { ServerResponse } from 'node:http';
import type { OpenedStream } from '../../llm/router.js';
import type { ChatRoom } from '../room.js';
import type { Call } from './call.js';
import { nativeRequest, streamNative } from './pass-through.js';
import { relay } from './relay.js';
import { unroutedCall } from './settle.js';

export async function stream(room: ChatRoom, res: ServerResponse, call: Call): Promise<void> {
  const native = nativeRequest(room, call, true);
  if (native) return streamNative(room, res, call, native);
  let opened: OpenedStream;
  let target: string;
  try {
    const routed = await room.router.stream(call.tier.targets, call.engine_request);
    opened = routed.value;
    target = routed.target;
  } catch (error) {
    throw await unroutedCall(room, call, true, error);
  }
  await relay(room, res, call, opened, target);
}
