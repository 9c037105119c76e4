// Server-sent events out, in OpenAI's framing: `data: <json>\n\n` per chunk, `data: [DONE]`
// at the end (named events, `event: <name>\n` first, for the Responses and Messages protocols);
// or in a protocol's own framing (ChatCall.framing). Each event is flushed as it comes, at the end of the tick it was written in
// (events of one tick leave in one write); when the client reads slower than the upstream
// writes, the writer waits for `drain`, so memory stays bounded.
import type { ServerResponse } from 'node:http';
import type { Framing } from './protocol.js';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
} as const;

/** Server-sent events: an `event:` line when the event is named, its JSON as `data:`. */
export const SSE_FRAMING: Framing = {
  headers: SSE_HEADERS,
  open: '',
  event: (data, name) =>
    name
      ? `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`
      : `data: ${JSON.stringify(data)}\n\n`,
  close: '',
};

export class SseWriter {
  private closed = false;
  private corked = false;
  /** Events written so far. */
  private events = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly framing: Framing = SSE_FRAMING,
  ) {
    res.once('close', () => {
      this.closed = true;
    });
  }

  get isClosed(): boolean {
    return this.closed || this.res.destroyed;
  }

  open(status = 200, extra_headers: Record<string, string | string[]> = {}): void {
    this.res.writeHead(status, { ...this.framing.headers, ...extra_headers });
    this.batch();
    if (this.framing.open) this.res.write(this.framing.open);
    this.res.flushHeaders();
  }

  /** Holds this tick's writes (the head, events) back to leave in one write when the tick ends. */
  private batch(): void {
    if (this.corked) return;
    this.corked = true;
    this.res.cork();
    process.nextTick(() => {
      this.corked = false;
      this.res.uncork();
    });
  }

  /** Resolves once the event is handed to the socket, or the client is gone; `name` gives it an `event:` line. */
  event(data: unknown, name?: string): Promise<void> {
    return this.raw(this.framing.event(data, name, this.events++));
  }

  done(): Promise<void> {
    return this.raw('data: [DONE]\n\n');
  }

  end(): void {
    if (this.res.writableEnded) return;
    if (this.framing.close && !this.isClosed) this.res.end(this.framing.close);
    else this.res.end();
  }

  private raw(text: string): Promise<void> {
    if (this.isClosed) return Promise.resolve();
    // Events written in the same tick (an upstream read often carries several) leave in one write.
    this.batch();
    if (this.res.write(text)) return Promise.resolve();
    return new Promise((resolve) => {
      const settle = () => {
        this.res.off('drain', settle);
        this.res.off('close', settle);
        resolve();
      };
      this.res.on('drain', settle);
      this.res.on('close', settle);
    });
  }
}

/** Parses an SSE body into its `data:` payloads (for tests and the bench, not the hot path). */
export function parseSseData(body: string): string[] {
  const out: string[] = [];
  for (const block of body.split(/\r?\n\r?\n/)) {
    const lines = block.split(/\r?\n/).filter((line) => line.startsWith('data:'));
    if (lines.length)
      out.push(lines.map((line) => line.slice(line.startsWith('data: ') ? 6 : 5)).join('\n'));
  }
  return out;
}
