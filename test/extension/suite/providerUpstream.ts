// A scripted model provider on loopback for the Add Model Provider tests: lists its models at
// GET /v1/models (OpenAI's Bearer key, Anthropic's x-api-key + anthropic-version, or no key, as
// an Ollama or LM Studio server) and answers POST /v1/chat/completions (streamed or not) with a
// fixed text and fixed usage, so that a test knows the tokens the gateway bills. It records
// every request's method, path and headers.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProviderUpstreamOptions {
  /** How the key comes: `bearer` (OpenAI and the OpenAI-compatible ones), `anthropic` (x-api-key on /models, Bearer on chat completions as Anthropic's compatible endpoint takes it), `none`. */
  auth: 'bearer' | 'anthropic' | 'none';
  key?: string;
  models: string[];
  content: string;
  usage: { prompt_tokens: number; completion_tokens: number };
}

export interface ProviderRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: unknown;
}

export class ProviderUpstream {
  readonly received: ProviderRequest[] = [];
  /** Chat completions answer 500 while set (the failover test). */
  failChat = false;

  private constructor(
    private readonly server: Server,
    private readonly options: ProviderUpstreamOptions,
  ) {}

  static async start(options: ProviderUpstreamOptions): Promise<ProviderUpstream> {
    const server = createServer();
    const upstream = new ProviderUpstream(server, options);
    server.on(
      'request',
      (req: IncomingMessage, res: ServerResponse) => void upstream.handle(req, res),
    );
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return upstream;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  get base_url(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  chatRequests(): ProviderRequest[] {
    return this.received.filter((r) => r.url === '/v1/chat/completions');
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, 'close');
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const body: unknown = text ? JSON.parse(text) : undefined;
    this.received.push({
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body,
    });
    const url = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && url === '/v1/models') {
      if (!this.authorized(req, 'models')) return json(res, 401, unauthorized());
      return json(res, 200, {
        object: 'list',
        data: this.options.models.map((id) => ({ id, object: 'model', owned_by: 'scripted' })),
      });
    }
    if (req.method === 'POST' && url === '/v1/chat/completions') {
      if (!this.authorized(req, 'chat')) return json(res, 401, unauthorized());
      if (this.failChat)
        return json(res, 500, { error: { message: 'scripted failure', type: 'server_error' } });
      return this.answer(res, body as { model: string; stream?: boolean });
    }
    json(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
  }

  private authorized(req: IncomingMessage, route: 'models' | 'chat'): boolean {
    const { auth, key } = this.options;
    if (auth === 'none') return true;
    if (auth === 'anthropic' && route === 'models')
      return req.headers['x-api-key'] === key && req.headers['anthropic-version'] !== undefined;
    return req.headers.authorization === `Bearer ${key}`;
  }

  private answer(res: ServerResponse, request: { model: string; stream?: boolean }): void {
    const { content, usage } = this.options;
    const total = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
    const base = { id: 'chatcmpl-scripted', created: 1_700_000_000, model: request.model };
    if (!request.stream)
      return json(res, 200, {
        ...base,
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        usage: total,
      });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const event = (data: unknown): boolean => res.write(`data: ${JSON.stringify(data)}\n\n`);
    const chunk = { ...base, object: 'chat.completion.chunk' };
    event({
      ...chunk,
      choices: [{ index: 0, delta: { role: 'assistant', content }, finish_reason: null }],
    });
    event({ ...chunk, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
    event({ ...chunk, choices: [], usage: total });
    res.end('data: [DONE]\n\n');
  }
}

function unauthorized(): unknown {
  return { error: { message: 'invalid key', type: 'authentication_error' } };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
