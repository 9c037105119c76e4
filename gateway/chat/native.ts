// Pass-through for targets that speak a client's protocol natively (`protocols` in the
// target's config): the request goes as it came (model name and output cap replaced by the
// engine and the pipeline), and the answer comes back as the upstream sent it, with our
// model id and x_aihub; usage is read from the protocol's own usage fields, and the event
// that carries it is held back until the bill is settled.
import { countTextTokens } from '../llm/tokens.js';
import type { NativeEvent } from '../llm/types.js';
import type { ChatCall, NativeDialect, ProtocolName, SseOut, Usage, XAihub } from './protocol.js';

/** The protocols whose native targets this file speaks to itself, and the field of their output cap; another protocol gives its own dialect (ChatCall.native). */
type OwnProtocol = 'responses' | 'messages' | 'completions';
const CAP_FIELD: Record<OwnProtocol, string> = {
  responses: 'max_output_tokens',
  messages: 'max_tokens',
  completions: 'max_tokens',
};

type Json = Record<string, unknown>;

/** How a request's protocol is spoken to natively, or null when no target can speak it. */
export function dialectOf(body: ChatCall): NativeDialect | null {
  if (body.native) return body.native;
  const protocol = body.protocol;
  return protocol in CAP_FIELD ? OWN[protocol as OwnProtocol] : null;
}

function ownDialect(protocol: OwnProtocol): NativeDialect {
  const cap_field = CAP_FIELD[protocol];
  return {
    cap_field,
    body: (original, max_output_tokens) => ({ ...original, [cap_field]: max_output_tokens }),
    usageOf: (answer) => nativeUsage(protocol, answer.usage),
    json: (answer, model) => ({ ...answer, model }),
    observe: () => null, // NativeStream reads these protocols' events itself
    holds_last: protocol === 'completions',
  };
}

const OWN: Record<OwnProtocol, NativeDialect> = {
  responses: ownDialect('responses'),
  messages: ownDialect('messages'),
  completions: ownDialect('completions'),
};

export function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

export function obj(value: unknown): Json | null {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : null;
}

/** Usage in chat terms from a protocol's usage object, or null when it is not there. */
function nativeUsage(protocol: OwnProtocol, raw: unknown): Usage | null {
  const usage = obj(raw);
  if (!usage) return null;
  if (protocol === 'responses') {
    const input = num(usage.input_tokens);
    const output = num(usage.output_tokens);
    if (input === null || output === null) return null;
    return {
      prompt_tokens: input,
      completion_tokens: output,
      cached_tokens: detail(usage.input_tokens_details, 'cached_tokens', input),
      reasoning_tokens: detail(usage.output_tokens_details, 'reasoning_tokens', output),
    };
  }
  if (protocol === 'messages') {
    const input = num(usage.input_tokens);
    const output = num(usage.output_tokens);
    if (input === null || output === null) return null;
    const cached = num(usage.cache_read_input_tokens) ?? 0;
    const written = num(usage.cache_creation_input_tokens) ?? 0;
    return {
      prompt_tokens: input + cached + written,
      completion_tokens: output,
      cached_tokens: cached,
      ...(written ? { cache_write_tokens: written } : {}),
    };
  }
  const prompt = num(usage.prompt_tokens);
  const completion = num(usage.completion_tokens);
  if (prompt === null || completion === null) return null;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    cached_tokens: detail(usage.prompt_tokens_details, 'cached_tokens', prompt),
    reasoning_tokens: detail(usage.completion_tokens_details, 'reasoning_tokens', completion),
  };
}

/** A detail count (`prompt_tokens_details.cached_tokens`, ...) within 0..most, else 0. */
function detail(details: unknown, field: string, most: number): number {
  const value = obj(details)?.[field];
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
    ? Math.min(value, most)
    : 0;
}

/** A JSON answer as the client gets it, without the bill, with the tier id as its model. */
export function nativeJson(dialect: NativeDialect, body: Json, model: string): Json {
  const { x_aihub: _theirs, ...rest } = body;
  return dialect.json(rest, model);
}

/** Relays a native stream: events out as they come, the billing event (and what follows it) held back. */
export class NativeStream {
  private usage: Usage | null = null;
  private input_tokens: number | null = null;
  /** Of input_tokens, those read from the upstream's cache (Messages' message_start). */
  private cached_tokens = 0;
  private cache_write_tokens = 0;
  private readonly generated: string[] = [];
  private held: { event: string | null; data: Json }[] = [];

  constructor(
    private readonly protocol: ProtocolName,
    private readonly dialect: NativeDialect,
    private readonly model: string,
  ) {}

  /** Events ready to send now. */
  push(event: NativeEvent): SseOut[] {
    if (event.data.startsWith('[DONE]')) return [];
    let data: Json;
    try {
      const parsed = obj(JSON.parse(event.data));
      if (!parsed) return [];
      data = parsed;
    } catch {
      return [];
    }
    this.observe(data);
    const out: SseOut[] = [];
    if (this.dialect.holds_last) {
      // The last chunk carries the bill: always hold one back.
      out.push(...this.release());
      this.held.push({ event: event.event, data });
      return out;
    }
    if (this.held.length || this.isBilling(data)) this.held.push({ event: event.event, data });
    else out.push(toOut(event.event, data));
    return out;
  }

  /** What to bill: the upstream's usage, else the prompt estimate and the text streamed, counted. */
  billed(prompt_tokens_estimate: number): Usage {
    if (this.usage) return this.usage;
    return {
      prompt_tokens: this.input_tokens ?? prompt_tokens_estimate,
      completion_tokens: countTextTokens(this.generated.join('')),
      estimated: true,
    };
  }

  /** The held-back events, x_aihub on the billing event. */
  finish(x_aihub: XAihub): SseOut[] {
    const billing = this.held.find((held) => this.dialect.holds_last || this.isBilling(held.data));
    if (billing) {
      if (this.protocol === 'responses' && obj(billing.data.response))
        billing.data.response = { ...obj(billing.data.response), x_aihub };
      else billing.data.x_aihub = x_aihub;
    }
    return this.release();
  }

  private release(): SseOut[] {
    const out = this.held.map((held) => toOut(held.event, held.data));
    this.held = [];
    return out;
  }

  private isBilling(data: Json): boolean {
    if (this.protocol === 'responses')
      return (
        data.type === 'response.completed' ||
        data.type === 'response.incomplete' ||
        data.type === 'response.failed'
      );
    return data.type === 'message_delta';
  }

  private observe(data: Json): void {
    if (!(this.protocol in CAP_FIELD)) {
      const usage = this.dialect.observe(data, this.model, this.generated);
      if (usage) this.usage = usage;
      return;
    }
    if (this.protocol === 'responses') {
      const response = obj(data.response);
      if (response) {
        if ('model' in response) data.response = { ...response, model: this.model };
        const usage = nativeUsage('responses', response.usage);
        if (usage) this.usage = usage;
      }
      if (typeof data.delta === 'string') this.generated.push(data.delta);
      return;
    }
    if (this.protocol === 'messages') {
      const message = obj(data.message);
      if (message) {
        data.message = { ...message, model: this.model };
        const usage = obj(message.usage);
        this.input_tokens = usage
          ? (num(usage.input_tokens) ?? 0) +
            (num(usage.cache_read_input_tokens) ?? 0) +
            (num(usage.cache_creation_input_tokens) ?? 0)
          : null;
        this.cached_tokens = usage ? (num(usage.cache_read_input_tokens) ?? 0) : 0;
        this.cache_write_tokens = usage ? (num(usage.cache_creation_input_tokens) ?? 0) : 0;
      }
      const delta = obj(data.delta);
      if (delta && typeof delta.text === 'string') this.generated.push(delta.text);
      if (delta && typeof delta.partial_json === 'string') this.generated.push(delta.partial_json);
      if (data.type === 'message_delta') {
        const usage = obj(data.usage);
        const output = usage ? num(usage.output_tokens) : null;
        // The final delta's usage may repeat the input counts; else they are message_start's
        // (cache reads included: billed at the cached price, not as input).
        const full = usage ? nativeUsage('messages', usage) : null;
        if (output !== null)
          this.usage = full?.prompt_tokens
            ? full
            : {
                prompt_tokens: this.input_tokens ?? 0,
                completion_tokens: output,
                cached_tokens: Math.min(this.cached_tokens, this.input_tokens ?? 0),
                ...(this.cache_write_tokens ? { cache_write_tokens: this.cache_write_tokens } : {}),
              };
      }
      return;
    }
    if ('model' in data) data.model = this.model;
    const usage = nativeUsage('completions', data.usage);
    if (usage) this.usage = usage;
    const choices = Array.isArray(data.choices) ? data.choices : [];
    for (const choice of choices)
      if (typeof obj(choice)?.text === 'string') this.generated.push(obj(choice)!.text as string);
  }
}

/** Named events keep their name; unnamed ones of a protocol that names its events get their `type`. */
function toOut(event: string | null, data: Json): SseOut {
  const name = event ?? (typeof data.type === 'string' ? data.type : null);
  return name ? { event: name, data } : { data };
}
