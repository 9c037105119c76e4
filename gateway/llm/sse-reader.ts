// Reads a server-sent-events body into the `data` of each event: the upstream half of a
// streamed chat completion, parsed by eventsource-parser (the WHATWG rules: LF, CR or CRLF,
// `data:` lines of one event joined by LF, comments and other fields skipped). Two things
// are added here: the body's end ends the last event (an upstream may omit the final blank
// line), and a bound: an event or a line larger than `max_event_chars` is an error, so a
// broken upstream cannot make the gateway buffer without limit.
import { StringDecoder } from 'node:string_decoder';
import { createParser, type EventSourceMessage } from 'eventsource-parser';

export class SseFormatError extends Error {
  override name = 'SseFormatError';
}

export interface SseEvent {
  /** The `event:` field, or null for the default `message` event. */
  event: string | null;
  data: string;
}

export async function* readSse(
  body: AsyncIterable<string | Buffer>,
  max_event_chars = 4 * 1024 * 1024,
): AsyncGenerator<SseEvent> {
  const events: SseEvent[] = [];
  let failure: SseFormatError | null = null;
  const tooLarge = () =>
    new SseFormatError(
      `an event or a line of the stream is larger than ${max_event_chars} characters`,
    );
  // The parser's own bound covers what it holds between chunks; an event completed within
  // one chunk is measured here.
  const parser = createParser({
    maxBufferSize: max_event_chars,
    onEvent: (message: EventSourceMessage) => {
      if (message.data.length > max_event_chars) failure ??= tooLarge();
      else events.push({ event: message.event ?? null, data: message.data });
    },
    onError: (error) => {
      if (error.type === 'max-buffer-size-exceeded') failure ??= tooLarge();
    },
  });
  // A character split across two chunks is decoded once both halves are in.
  const decoder = new StringDecoder('utf8');
  const feed = (text: string) => {
    parser.feed(text);
    if (failure) throw failure;
  };
  for await (const chunk of body) {
    feed(typeof chunk === 'string' ? chunk : decoder.write(chunk));
    while (events.length > 0) yield events.shift()!;
  }
  feed(`${decoder.end()}\n\n`);
  while (events.length > 0) yield events.shift()!;
}
