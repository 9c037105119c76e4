// Reads a server-sent-events body into the `data` of each event: the upstream half of a
// streamed chat completion. Lines end in LF or CRLF; `data:` lines of one event are joined
// by LF; comments (`:`) and other fields are skipped; an event ends at a blank line (and the
// body's end ends the last one). Bounded: one event larger than `max_event_chars` is an error,
// so a broken upstream cannot make the gateway buffer without limit.

import { StringDecoder } from 'node:string_decoder';

export class SseFormatError extends Error {
  override name = 'SseFormatError';
}

export interface SseEvent {
  /** The `event:` field, or null for the default `message` event. */
  event: string | null;
  data: string;
}

export async function* readSse(body: AsyncIterable<string | Buffer>, max_event_chars = 4 * 1024 * 1024): AsyncGenerator<SseEvent> {
  let pending = '';
  let data: string[] = [];
  let data_chars = 0;
  let event: string | null = null;
  // Complete lines go through `line`; what remains after the last LF waits for the next chunk.
  const events: SseEvent[] = [];
  const line = (text: string) => {
    const end = text.endsWith('\r') ? text.length - 1 : text.length;
    if (end === 0) {
      if (data.length > 0) events.push({ event, data: data.length === 1 ? data[0]! : data.join('\n') });
      data = [];
      data_chars = 0;
      event = null;
      return;
    }
    if (text.startsWith('data:')) {
      const value = text.slice(text.charCodeAt(5) === 32 ? 6 : 5, end);
      data_chars += value.length;
      if (data_chars > max_event_chars) throw new SseFormatError(`an event of the stream is larger than ${max_event_chars} characters`);
      data.push(value);
    } else if (text.startsWith('event:')) {
      event = text.slice(text.charCodeAt(6) === 32 ? 7 : 6, end);
    }
  };
  // A character split across two chunks is decoded once both halves are in.
  const decoder = new StringDecoder('utf8');
  for await (const chunk of body) {
    const text = pending + (typeof chunk === 'string' ? chunk : decoder.write(chunk));
    let start = 0;
    for (let lf = text.indexOf('\n'); lf !== -1; lf = text.indexOf('\n', start)) {
      line(text.slice(start, lf));
      start = lf + 1;
    }
    pending = start === 0 ? text : text.slice(start);
    if (pending.length > max_event_chars) throw new SseFormatError(`a line of the stream is longer than ${max_event_chars} characters`);
    while (events.length > 0) yield events.shift()!;
  }
  pending += decoder.end();
  if (pending) line(pending);
  line('');
  while (events.length > 0) yield events.shift()!;
}
