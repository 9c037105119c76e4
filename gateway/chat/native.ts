// Pass-through for targets that speak a client's protocol natively (`protocols` in the
// target's config): the request goes as it came (model name and output cap replaced by the
// engine and the pipeline), and the answer comes back as the upstream sent it, with our
// model id and x_aihub; usage is read from the protocol's own usage fields, and the event
// that carries it is held back until the bill is settled. What each protocol reads and
// rewrites is its dialect (protocols/<name>/native.ts); this file knows none of them.
import { countTextTokens } from '../llm/tokens.js';
import type { NativeEvent } from '../llm/types.js';
import type { ChatCall, NativeDialect, NativeSeen, SseOut, Usage, XAihub } from './protocol.js';
import { genAiFinishReasons, tracingOn } from '../telemetry/index.js';

type Json = Record<string, unknown>;

/** How a request's protocol is spoken to natively, or null when no target can speak it. */
export function dialectOf(body: ChatCall): NativeDialect | null {
  return body.native ?? null;
}

export function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

export function obj(value: unknown): Json | null {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : null;
}

/** A detail count (`prompt_tokens_details.cached_tokens`, ...) within 0..most, else 0. */
export function detail(details: unknown, field: string, most: number): number {
  const value = obj(details)?.[field];
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
    ? Math.min(value, most)
    : 0;
}

/**
 * Usage in chat terms from a usage object's two counts and their details (the names the
 * protocol gives them), or null when it is not there or a count is missing.
 */
export function countedUsage(
  raw: unknown,
  [prompt_field, output_field]: readonly [string, string],
): Usage | null {
  const usage = obj(raw);
  if (!usage) return null;
  const prompt = num(usage[prompt_field]);
  const output = num(usage[output_field]);
  if (prompt === null || output === null) return null;
  return {
    prompt_tokens: prompt,
    completion_tokens: output,
    cached_tokens: detail(usage[`${prompt_field}_details`], 'cached_tokens', prompt),
    reasoning_tokens: detail(usage[`${output_field}_details`], 'reasoning_tokens', output),
  };
}

/** The address of a protocol served at `<base_url>/<path>` with the target's model in the body's `model`. */
export function besideChat(
  path: string,
  headers: (api_key: string) => Record<string, string | null> = () => ({}),
): NativeDialect['address'] {
  return (target, body) => ({
    path,
    body: { ...body, model: target.model },
    headers: headers(target.api_key),
  });
}

/** The string `field` of each element of `list` that has one (choices' or candidates' finish reasons). */
export function choiceReasons(list: unknown, field: string): string[] {
  const out: string[] = [];
  for (const item of Array.isArray(list) ? list : []) {
    const reason = obj(item)?.[field];
    if (typeof reason === 'string') out.push(reason);
  }
  return out;
}

/** A JSON answer as the client gets it, without the bill, with the tier id as its model. */
export function nativeJson(dialect: NativeDialect, body: Json, model: string): Json {
  const { x_aihub: _theirs, ...rest } = body;
  return dialect.json(rest, model);
}

/** Relays a native stream: events out as they come, the billing event (and what follows it) held back. */
export class NativeStream {
  private readonly seen: NativeSeen = { usage: null, input_tokens: null, generated: [] };
  private readonly reader;
  private held: { event: string | null; data: Json }[] = [];

  constructor(
    private readonly dialect: NativeDialect,
    model: string,
  ) {
    this.reader = dialect.reader(model);
  }

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
    this.reader.observe(data, this.seen);
    if (tracingOn()) genAiFinishReasons(() => this.dialect.finishOf(data));
    const out: SseOut[] = [];
    if (this.dialect.holds_last) {
      // The last chunk carries the bill: always hold one back.
      out.push(...this.release());
      this.held.push({ event: event.event, data });
      return out;
    }
    if (this.held.length || this.reader.isBilling(data))
      this.held.push({ event: event.event, data });
    else out.push(toOut(event.event, data));
    return out;
  }

  /** What to bill: the upstream's usage, else the prompt estimate and the text streamed, counted. */
  billed(prompt_tokens_estimate: number): Usage {
    if (this.seen.usage) return this.seen.usage;
    return {
      prompt_tokens: this.seen.input_tokens ?? prompt_tokens_estimate,
      completion_tokens: countTextTokens(this.seen.generated.join('')),
      estimated: true,
    };
  }

  /** The text (and tool-call arguments) streamed so far, as the dialect's reader collected it. */
  text(): string {
    return this.seen.generated.join('');
  }

  /** The held-back events, x_aihub on the billing event. */
  finish(x_aihub: XAihub): SseOut[] {
    const billing = this.held.find(
      (held) => this.dialect.holds_last || this.reader.isBilling(held.data),
    );
    if (billing) this.reader.bill(billing.data, x_aihub);
    return this.release();
  }

  private release(): SseOut[] {
    const out = this.held.map((held) => toOut(held.event, held.data));
    this.held = [];
    return out;
  }
}

/** Named events keep their name; unnamed ones of a protocol that names its events get their `type`. */
function toOut(event: string | null, data: Json): SseOut {
  const name = event ?? (typeof data.type === 'string' ? data.type : null);
  return name ? { event: name, data } : { data };
}
