// Chat completions, the protocol the engines speak: the request passes through (minus the
// fields the gateway decides), and the answer is the upstream's with our id, model, usage
// and x_aihub. The finishing chunk of a stream is held back until the bill is settled.
import { ApiError } from '../../../http/errors.js';
import type { UpstreamChunk, UpstreamCompletion, UpstreamUsage } from '../../../llm/types.js';
import { chatRequestSchema, GATEWAY_FIELDS, paramOf, type ChatRequest } from '../../schema.js';
import {
  usageBody,
  type AnswerMeta,
  type ChatCall,
  type Protocol,
  type SseOut,
  type StreamPresenter,
  type Usage,
  type XAihub,
} from '../../protocol.js';
import { pipelineHandler } from '../../pipeline.js';
import { type ProtocolRoutes, V1_DOC } from '../../route.js';

export const chatProtocol: Protocol = {
  name: 'chat',
  parse(raw) {
    const body = parseRequest(raw);
    const include_usage = body.stream_options?.include_usage === true;
    const call: ChatCall = {
      protocol: 'chat',
      model: body.model,
      messages: body.messages,
      params: upstreamParams(body),
      stream: body.stream === true,
      choices: body.n ?? 1,
      requested_max: body.max_completion_tokens ?? body.max_tokens ?? null,
      cap_field: body.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens',
      original: raw as Record<string, unknown>,
      warnings: [],
      json: chatJson,
      bill_in_body: true,
      streamer: (meta) => new ChatStream(meta, include_usage),
    };
    return call;
  },
};

function chatJson(
  completion: UpstreamCompletion,
  usage: Usage,
  meta: AnswerMeta,
): Record<string, unknown> {
  const {
    usage: upstream_usage,
    id: _id,
    model: _model,
    object: _object,
    created: _created,
    x_aihub: _theirs,
    ...rest
  } = completion as UpstreamCompletion & Record<string, unknown>;
  return {
    id: `chatcmpl-${meta.request_id}`,
    object: 'chat.completion',
    created: meta.created,
    model: meta.model,
    ...rest,
    choices: completion.choices.map((choice, index) => ({
      ...choice,
      index: choice.index ?? index,
      logprobs: choice.logprobs ?? null,
    })),
    usage: usageBody(usage.estimated ? null : upstream_usage, usage),
  };
}

class ChatStream implements StreamPresenter {
  readonly done_marker = true;
  private held_back: Record<string, unknown> | null = null;
  private readonly id: string;

  constructor(
    private readonly meta: AnswerMeta,
    private readonly include_usage: boolean,
  ) {
    this.id = `chatcmpl-${meta.request_id}`;
  }

  start(): SseOut[] {
    return [];
  }

  chunk(chunk: UpstreamChunk): SseOut[] {
    const choices = chunk.choices;
    if (!choices || choices.length === 0) return []; // the upstream's usage chunk: ours comes at the end
    const out: SseOut[] = [];
    if (this.held_back) out.push({ data: this.held_back });
    const {
      usage: _usage,
      id: _id,
      object: _object,
      created: _created,
      model: _model,
      ...fields
    } = chunk as UpstreamChunk & Record<string, unknown>;
    const event = {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.meta.created,
      model: this.meta.model,
      ...fields,
      ...(this.include_usage ? { usage: null } : {}),
    };
    // The chunk that finishes the choice is sent last, carrying x_aihub, once the bill is settled.
    if (choices.some((choice) => choice.finish_reason)) this.held_back = event;
    else {
      this.held_back = null;
      out.push({ data: event });
    }
    return out;
  }

  finish(usage: Usage, upstream: UpstreamUsage | null, x_aihub: XAihub): SseOut[] {
    const { id, meta } = this;
    const finish = this.held_back ?? {
      id,
      object: 'chat.completion.chunk',
      created: meta.created,
      model: meta.model,
      choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
      ...(this.include_usage ? { usage: null } : {}),
    };
    if (!this.include_usage) return [{ data: { ...finish, x_aihub } }];
    return [
      { data: finish },
      {
        data: {
          id,
          object: 'chat.completion.chunk',
          created: meta.created,
          model: meta.model,
          choices: [],
          usage: usageBody(upstream, usage),
          x_aihub,
        },
      },
    ];
  }

  fail(error: ApiError, x_aihub: XAihub): SseOut[] {
    return [
      {
        data: {
          error: {
            message: error.message,
            type: error.type ?? 'api_error',
            param: error.param,
            code: error.code,
          },
          x_aihub,
        },
      },
    ];
  }
}

function upstreamParams(body: ChatRequest): Record<string, unknown> {
  // Field names come from the client: a `__proto__` field is a field here, not a prototype.
  const params: Record<string, unknown> = Object.create(null);
  for (const [field, value] of Object.entries(body))
    if (!GATEWAY_FIELDS.has(field) && value !== undefined) params[field] = value;
  return params;
}

function parseRequest(raw: unknown): ChatRequest {
  const result = chatRequestSchema.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const param = paramOf(issue.path);
  const message =
    issue.code === 'unrecognized_keys'
      ? `unknown field(s) ${issue.keys.join(', ')}`
      : issue.message;
  throw new ApiError(
    400,
    'invalid_value',
    param ? `invalid value for \`${param}\`: ${message}` : message,
    param,
    'invalid_request_error',
  );
}

/** Chat completions in the route table. */
export const chatRoutes: ProtocolRoutes = {
  name: 'chat',
  post: { '/v1/chat/completions': pipelineHandler(chatProtocol) },
  docs: [
    {
      ...V1_DOC,
      method: 'post',
      path: '/v1/chat/completions',
      summary:
        'Create a chat completion (OpenAI shape plus x_aihub; stream: true gives text/event-stream chunks ending in data: [DONE])',
      body: chatRequestSchema,
      success: {
        status: 200,
        description:
          'a chat.completion object with x_aihub {request_id, tier, target, cost, balance, currency, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, usage: "reported" | "estimated", receivable?, unpriced?}',
      },
      errors: {
        400: 'invalid_value, invalid_json, context_length_exceeded; or an upstream 4xx relayed with its own status, code, param and message',
        402: 'insufficient_balance: the wallet cannot cover the worst case; top up at /wallet?amount=<shortfall> (named in the message, x_aihub.topup_url and the x-aihub-topup-url header)',
        403: 'account or key disabled',
        404: 'model_not_found',
        429: 'rate_limit_exceeded (requests per minute, or the free tier daily allowance), with Retry-After',
        502: 'every upstream failed',
        503: 'no upstream available',
        504: 'upstream timed out',
      },
    },
  ],
};
