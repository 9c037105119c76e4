// The bench's stand-in for an OpenAI-compatible upstream, as its own process: raw HTTP/1.1
// on a net server, answers rendered from templates. A real upstream runs on another machine;
// here it shares two cores with the load generator and the gateway, so every microsecond it
// spends is taken from the gateway being measured. It answers like the tests' scripted
// upstream (same content, chunks and rough usage), streams each event as its own write, and
// serves the direct runs and the gateway alike. Prints {"port": N} when listening.
import net from 'node:net';
import { DEFAULT_CONTENT, roughUsage, splitContent } from './scripted-upstream.js';

const CHUNKS = Number(process.env.SCRIPTED_CHUNKS ?? 8);
const PIECES = splitContent(DEFAULT_CONTENT, CHUNKS);
const COMPLETION_TOKENS = roughUsage({ messages: [] }, DEFAULT_CONTENT).completion_tokens;
const CONTENT_JSON = JSON.stringify(DEFAULT_CONTENT);

function answer(socket: net.Socket, body: string): void {
  let request: {
    model?: unknown;
    messages?: unknown;
    stream?: unknown;
    stream_options?: { include_usage?: unknown };
  } | null = null;
  try {
    request = JSON.parse(body);
  } catch {
    request = null;
  }
  if (!request || typeof request !== 'object') {
    const text = '{"error":{"message":"invalid JSON","type":"invalid_request_error","code":null}}';
    socket.write(
      `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: ${text.length}\r\n\r\n${text}`,
    );
    return;
  }
  const model = JSON.stringify(typeof request.model === 'string' ? request.model : 'scripted');
  const prompt_tokens = roughUsage(request, DEFAULT_CONTENT).prompt_tokens;
  // OpenAI's usage shape with its details (half the prompt read from a cache), so that the
  // gateway's handling of cached pricing and of details in streams is on the measured path.
  const usage = `{"prompt_tokens":${prompt_tokens},"completion_tokens":${COMPLETION_TOKENS},"total_tokens":${prompt_tokens + COMPLETION_TOKENS},"prompt_tokens_details":{"cached_tokens":${Math.floor(prompt_tokens / 2)}},"completion_tokens_details":{"reasoning_tokens":0}}`;
  const base = `"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":1700000000,"model":${model}`;
  if (request.stream === true) {
    socket.write(
      'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n',
    );
    const event = (json: string) => {
      const text = `data: ${json}\n\n`;
      socket.write(`${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`);
    };
    event(
      `{${base},"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
    );
    for (const piece of PIECES)
      event(
        `{${base},"choices":[{"index":0,"delta":{"content":${JSON.stringify(piece)}},"finish_reason":null}]}`,
      );
    event(`{${base},"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`);
    if (request.stream_options?.include_usage === true)
      event(`{${base},"choices":[],"usage":${usage}}`);
    socket.write('e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n');
    return;
  }
  const text = `{"id":"chatcmpl-scripted","object":"chat.completion","created":1700000000,"model":${model},"choices":[{"index":0,"message":{"role":"assistant","content":${CONTENT_JSON}},"finish_reason":"stop","logprobs":null}],"usage":${usage}}`;
  socket.write(
    `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
  );
}

const server = net.createServer({ noDelay: true }, (socket) => {
  let buffer: Buffer | null = null;
  socket.on('error', () => undefined);
  socket.on('data', (data: Buffer) => {
    buffer = buffer ? Buffer.concat([buffer, data]) : data;
    for (;;) {
      const end: number = buffer.indexOf('\r\n\r\n');
      if (end === -1) return;
      const head: string = buffer.toString('latin1', 0, end);
      const length: number = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
      if (buffer.length < end + 4 + length) return;
      const body = buffer.toString('utf8', end + 4, end + 4 + length);
      buffer = buffer.length > end + 4 + length ? buffer.subarray(end + 4 + length) : null;
      if (!head.startsWith('POST /v1/chat/completions ')) {
        socket.write('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n');
      } else answer(socket, body);
      if (!buffer) return;
    }
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as net.AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => process.exit(0));
