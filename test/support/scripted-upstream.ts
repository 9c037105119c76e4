// A scripted OpenAI-compatible upstream on loopback, for tests and the bench. Each request
// gets the next queued behavior (or the default one): answer normally (with or without
// usage, streamed slowly or not), answer with an error status, hang, reset the connection,
// or break a stream halfway. It records what it received and whether the caller hung up.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

/** What the upstream does with one request. */
export type PlainBehavior =
  | {
      kind: 'ok';
      /** The answer's text; split into `chunks` pieces when streamed. */
      content?: string;
      /** Report `usage` (default true). Without it the gateway must count tokens itself. An object is sent as given (details included). */
      usage?: boolean | ScriptedUsage;
      /** Answer with these tool calls (finish_reason `tool_calls`); with `content` given too, the text comes first (a model saying what it is about to do). */
      tool_calls?: Array<{ id: string; name: string; arguments: string }>;
      /** Extra fields of the answer's message (annotations, reasoning_content, ...). */
      message_extra?: Record<string, unknown>;
      chunks?: number;
      /** Pause before each streamed chunk. */
      chunk_delay_ms?: number;
    }
  | { kind: 'status'; status: number; body?: unknown; headers?: Record<string, string> }
  /** Answer with this exact JSON text (for bodies JSON.stringify cannot make, such as very deep ones). */
  | { kind: 'raw'; status: number; text: string }
  /** Read the request and never answer (until the caller gives up). */
  | { kind: 'hang' }
  /** Destroy the socket without an answer. */
  | { kind: 'reset' }
  /**
   * Ignore max_tokens, as a broken upstream does: stream `piece` chunks until the caller hangs
   * up (or `max_chunks`, default 50,000), claiming them all in usage; as JSON, `json_pieces`
   * pieces (default 17,409) with usage to match.
   */
  | { kind: 'runaway'; piece?: string; max_chunks?: number; json_pieces?: number }
  /** Stream `chunks` content chunks, then destroy the socket. */
  | { kind: 'break_stream'; chunks: number; content?: string }
  /** Answer exactly this: `completion` as JSON, or (when the request streams: `stream: true`, or Gemini's `:streamGenerateContent`) `chunks` as SSE then [DONE]. */
  | { kind: 'exact'; completion?: unknown; chunks?: unknown[] };

export type Behavior =
  | PlainBehavior
  /** Decide from the request (a scripted model that reads the conversation and the tools). */
  | { kind: 'respond'; answer: (body: any) => PlainBehavior }
  /** Read the request, then answer `then` once `until` resolves (a test acts while the call is upstream). */
  | { kind: 'wait'; until: Promise<unknown>; then: PlainBehavior };

export interface Received {
  body: any;
  headers: IncomingMessage['headers'];
  url: string;
  /** The caller closed the connection before the answer was complete. */
  aborted: boolean;
  /** Streamed content chunks written before the end or the abort. */
  chunks_sent: number;
}

export interface ScriptedUsage {
  prompt_tokens: number;
  completion_tokens: number;
  [field: string]: unknown;
}

export const DEFAULT_CONTENT =
  'Hello from the scripted upstream. It answers every question the same way, in several words.';

export class ScriptedUpstream {
  readonly received: Received[] = [];
  private readonly queue: Behavior[] = [];
  private fallback: Behavior = { kind: 'ok' };
  private readonly sockets = new Set<import('node:net').Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(
    fallback: Behavior = { kind: 'ok' },
    options: { record?: boolean } = {},
  ): Promise<ScriptedUpstream> {
    const record = options.record ?? true;
    let upstream: ScriptedUpstream | null = null;
    const server = createServer((req, res) => upstream!.handle(req, res, record));
    server.keepAliveTimeout = 60_000;
    server.on('connection', (socket) => {
      upstream?.sockets.add(socket);
      socket.once('close', () => upstream?.sockets.delete(socket));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    upstream = new ScriptedUpstream(server, (server.address() as AddressInfo).port);
    upstream.fallback = fallback;
    return upstream;
  }

  /** The base URL an OpenAI client or engine uses (`.../v1`). */
  get base_url(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  /** Behaviors for the next requests, in order; then the default applies again. */
  script(...behaviors: Behavior[]): this {
    this.queue.push(...behaviors);
    return this;
  }

  setDefault(behavior: Behavior): this {
    this.fallback = behavior;
    return this;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    this.server.close();
    await once(this.server, 'close');
  }

  private handle(req: IncomingMessage, res: ServerResponse, record: boolean): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let body: any = null;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = null;
      }
      const entry: Received = {
        body,
        headers: req.headers,
        url: req.url ?? '',
        aborted: false,
        chunks_sent: 0,
      };
      if (record) this.received.push(entry);
      res.on('close', () => {
        if (!res.writableFinished) entry.aborted = true;
      });
      const next = this.queue.shift() ?? this.fallback;
      if (next.kind === 'wait') {
        void next.until.then(() => this.answer(next.then, body, res, entry));
        return;
      }
      const behavior = next.kind === 'respond' ? next.answer(body) : next;
      // An exact answer serves any path (a target speaking /v1/responses or /v1/messages natively).
      if (
        (req.url !== '/v1/chat/completions' && behavior.kind !== 'exact') ||
        req.method !== 'POST'
      ) {
        json(res, 404, {
          error: {
            message: `no route ${req.method} ${req.url}`,
            type: 'invalid_request_error',
            code: 'not_found',
          },
        });
        return;
      }
      this.answer(behavior, body, res, entry);
    });
  }

  private answer(behavior: PlainBehavior, body: any, res: ServerResponse, entry: Received): void {
    switch (behavior.kind) {
      case 'status':
        json(
          res,
          behavior.status,
          behavior.body ?? {
            error: { message: `scripted ${behavior.status}`, type: 'server_error', code: null },
          },
          behavior.headers,
        );
        return;
      case 'raw':
        res.writeHead(behavior.status, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(behavior.text),
        });
        res.end(behavior.text);
        return;
      case 'hang':
        return;
      case 'exact':
        // Gemini's API says it streams in the path, not the body.
        if (body?.stream || entry.url.includes(':streamGenerateContent')) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          for (const chunk of behavior.chunks ?? [])
            res.write(`data: ${JSON.stringify(chunk)}\n\n`);
          res.end('data: [DONE]\n\n');
        } else json(res, 200, behavior.completion ?? {});
        return;
      case 'reset':
        res.socket?.destroy();
        return;
      case 'runaway':
        void runaway(res, body, behavior, entry);
        return;
      case 'break_stream':
        void stream(
          res,
          body,
          {
            content: behavior.content ?? DEFAULT_CONTENT,
            chunks: behavior.chunks + 4,
            usage: null,
            delay_ms: 10,
            break_after: behavior.chunks,
          },
          entry,
        );
        return;
      case 'ok': {
        const content = behavior.content ?? DEFAULT_CONTENT;
        const usage =
          behavior.usage === false
            ? null
            : typeof behavior.usage === 'object'
              ? behavior.usage
              : roughUsage(body, content);
        const tool_calls = behavior.tool_calls?.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: call.arguments },
        }));
        const text_before_tools = tool_calls ? behavior.content : undefined;
        if (body?.stream) {
          const wants_usage = usage !== null && body.stream_options?.include_usage === true;
          void stream(
            res,
            body,
            {
              content,
              chunks: behavior.chunks ?? 8,
              usage: wants_usage ? usage : null,
              delay_ms: behavior.chunk_delay_ms ?? 0,
              break_after: null,
              tool_calls,
              text_before_tools,
            },
            entry,
          );
          return;
        }
        const message = tool_calls
          ? {
              role: 'assistant',
              content: text_before_tools ?? null,
              tool_calls,
              ...behavior.message_extra,
            }
          : { role: 'assistant', content, ...behavior.message_extra };
        json(res, 200, {
          id: 'chatcmpl-scripted',
          object: 'chat.completion',
          created: 1_700_000_000,
          model: body?.model ?? 'scripted',
          choices: [
            {
              index: 0,
              message,
              finish_reason: tool_calls ? 'tool_calls' : 'stop',
              logprobs: null,
            },
          ],
          ...(usage
            ? { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } }
            : {}),
        });
      }
    }
  }
}

/** Deterministic, obviously-not-our-tokenizer usage: one prompt token per 4 bytes, one completion token per word. */
export function roughUsage(
  body: any,
  content: string,
): { prompt_tokens: number; completion_tokens: number } {
  return {
    prompt_tokens: Math.ceil(JSON.stringify(body?.messages ?? []).length / 4),
    completion_tokens: content.split(/\s+/).filter(Boolean).length,
  };
}

function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export function splitContent(content: string, pieces: number): string[] {
  const words = content.split(/(?<=\s)/);
  const per = Math.max(1, Math.ceil(words.length / pieces));
  const out: string[] = [];
  for (let i = 0; i < words.length; i += per) out.push(words.slice(i, i + per).join(''));
  return out;
}

async function stream(
  res: ServerResponse,
  body: any,
  plan: {
    content: string;
    chunks: number;
    usage: ScriptedUsage | null;
    delay_ms: number;
    break_after: number | null;
    tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
    text_before_tools?: string | undefined;
  },
  entry: Received,
): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const base = {
    id: 'chatcmpl-scripted',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: body?.model ?? 'scripted',
  };
  const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
  send({
    ...base,
    choices: [
      {
        index: 0,
        delta: { role: 'assistant', content: plan.tool_calls ? null : '' },
        finish_reason: null,
      },
    ],
  });
  if (plan.tool_calls) {
    // Text before the calls, when the behavior gave some.
    if (plan.text_before_tools)
      for (const piece of splitContent(plan.text_before_tools, 2))
        send({ ...base, choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] });
    plan.tool_calls.forEach((call, index) => {
      const half = Math.ceil(call.function.arguments.length / 2);
      send({
        ...base,
        choices: [
          {
            index: 0,
            delta: {
              tool_calls: [
                {
                  index,
                  id: call.id,
                  type: 'function',
                  function: {
                    name: call.function.name,
                    arguments: call.function.arguments.slice(0, half),
                  },
                },
              ],
            },
            finish_reason: null,
          },
        ],
      });
      send({
        ...base,
        choices: [
          {
            index: 0,
            delta: {
              tool_calls: [{ index, function: { arguments: call.function.arguments.slice(half) } }],
            },
            finish_reason: null,
          },
        ],
      });
    });
    send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] });
    if (plan.usage)
      send({
        ...base,
        choices: [],
        usage: {
          ...plan.usage,
          total_tokens: plan.usage.prompt_tokens + plan.usage.completion_tokens,
        },
      });
    res.end('data: [DONE]\n\n');
    return;
  }
  for (const piece of splitContent(plan.content, plan.chunks)) {
    if (plan.delay_ms) await new Promise((resolve) => setTimeout(resolve, plan.delay_ms));
    if (res.destroyed) return;
    if (plan.break_after !== null && entry.chunks_sent >= plan.break_after) {
      res.socket?.destroy();
      return;
    }
    send({ ...base, choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] });
    entry.chunks_sent++;
  }
  send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
  if (plan.usage)
    send({
      ...base,
      choices: [],
      usage: {
        ...plan.usage,
        total_tokens: plan.usage.prompt_tokens + plan.usage.completion_tokens,
      },
    });
  res.end('data: [DONE]\n\n');
}

/** An upstream that streams on past max_tokens until its caller leaves. */
async function runaway(
  res: ServerResponse,
  body: any,
  behavior: Extract<Behavior, { kind: 'runaway' }>,
  entry: Received,
): Promise<void> {
  const piece = behavior.piece ?? 'word ';
  const base = { id: 'chatcmpl-runaway', object: 'chat.completion.chunk', created: 1_700_000_000 };
  if (!body?.stream) {
    const pieces = behavior.json_pieces ?? 17_409;
    json(res, 200, {
      ...base,
      object: 'chat.completion',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: piece.repeat(pieces) },
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 20, completion_tokens: pieces, total_tokens: 20 + pieces },
    });
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const max = behavior.max_chunks ?? 50_000;
  while (entry.chunks_sent < max && !res.destroyed) {
    const data = {
      ...base,
      choices: [{ index: 0, delta: { content: piece }, finish_reason: null }],
    };
    const more = res.write(`data: ${JSON.stringify(data)}\n\n`);
    entry.chunks_sent++;
    // At most 16 chunks a millisecond (50,000 take at least 3 s), waiting for a reader that is
    // behind: the caller's hang-up is seen long before the end.
    if (!more) await new Promise((resolve) => res.once('drain', resolve).once('close', resolve));
    if (entry.chunks_sent % 16 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  }
  if (res.destroyed) return;
  const usage = { prompt_tokens: 20, completion_tokens: entry.chunks_sent };
  res.write(
    `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`,
  );
  if (body.stream_options?.include_usage)
    res.write(`data: ${JSON.stringify({ ...base, choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}

/** A model's reply that says `text`, then calls the tools (ids made unique per call). */
export function toolCallsReply(
  text: string,
  ...calls: Array<[name: string, args: unknown]>
): Behavior {
  return {
    kind: 'ok',
    content: text,
    tool_calls: calls.map(([name, args], i) => ({
      id: `call_${name}_${i}_${Math.random().toString(36).slice(2, 8)}`,
      name,
      arguments: JSON.stringify(args),
    })),
  };
}

/** A loopback port with nothing listening: connections to it are refused. */
export async function refusedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}
