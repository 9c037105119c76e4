// OpenAI's legacy completions (`POST /v1/completions`), used by editor autocomplete: the
// prompt (and `suffix`, for fill-in-the-middle) becomes a chat call. With a suffix the
// upstream gets a FIM prompt (<|fim_prefix|>…<|fim_suffix|>…<|fim_middle|>) and an
// instruction to answer with the middle only; the answer comes back as text_completion.
import { z } from 'zod';
import type { ApiError } from '../../../http/errors.js';
import type { ChatMessage } from '../../../llm/messages.js';
import { FIM_MIDDLE, FIM_PREFIX, FIM_SUFFIX } from '../../../llm/engines/builtin-fim.js';
import type { UpstreamChunk, UpstreamCompletion } from '../../../llm/types.js';
import { invalid, parseBody } from '../parse.js';
import type {
  AnswerMeta,
  ChatCall,
  Protocol,
  SseOut,
  StreamPresenter,
  Usage,
  XAihub,
} from '../../protocol.js';
import { completionsNative } from './native.js';
import { pipelineHandler } from '../../pipeline.js';
import { type ProtocolRoutes, BILLED_ERRORS, HEADERS_NOTE, V1_DOC } from '../../route.js';

const text = z.string().max(10_000_000);

export const completionsRequestSchema = z.looseObject({
  model: z.string().min(1).max(256),
  prompt: z.union([
    text,
    z.array(text).min(1).max(1),
    z.array(z.int().min(0)).max(1_000_000),
    z.array(z.array(z.int().min(0))).max(1),
  ]),
  suffix: text.nullable().optional(),
  max_tokens: z.int().min(1).max(10_000_000).nullable().optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  stop: z
    .union([z.string().max(1_024), z.array(z.string().max(1_024)).max(4)])
    .nullable()
    .optional(),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  n: z.literal(1, 'only n = 1 is supported').nullable().optional(),
  best_of: z.literal(1, 'only best_of = 1 is supported').nullable().optional(),
  echo: z.literal(false, 'echo is not supported').nullable().optional(),
  seed: z.int().nullable().optional(),
  user: z.string().max(256).optional(),
});
export type CompletionsRequest = z.output<typeof completionsRequestSchema>;

const FIM_INSTRUCTION = `You complete code. The user message is a fill-in-the-middle prompt: ${FIM_PREFIX} the code before the cursor ${FIM_SUFFIX} the code after it ${FIM_MIDDLE}. Answer with exactly the text that goes at the cursor, nothing else: no explanation, no code fences.`;
const CONTINUE_INSTRUCTION =
  'Continue the text of the user message. Answer with the continuation only, nothing else.';

export const completionsProtocol: Protocol = {
  name: 'completions',
  parse(raw) {
    const body = parseBody(completionsRequestSchema, raw);
    const prompt = promptText(body.prompt);
    const messages: ChatMessage[] =
      body.suffix != null
        ? [
            { role: 'system', content: FIM_INSTRUCTION },
            {
              role: 'user',
              content: `${FIM_PREFIX}${prompt}${FIM_SUFFIX}${body.suffix}${FIM_MIDDLE}`,
            },
          ]
        : [
            { role: 'system', content: CONTINUE_INSTRUCTION },
            { role: 'user', content: prompt },
          ];
    const params: Record<string, unknown> = {};
    for (const field of ['temperature', 'top_p', 'stop', 'seed', 'user'] as const)
      if (body[field] != null) params[field] = body[field];
    const include_usage = body.stream_options?.include_usage === true;
    const call: ChatCall = {
      protocol: 'completions',
      model: body.model,
      messages,
      params,
      stream: body.stream === true,
      choices: 1,
      requested_max: body.max_tokens ?? null,
      cap_field: 'max_tokens',
      original: raw as Record<string, unknown>,
      warnings: [],
      json: completionJson,
      bill_in_body: true,
      native: completionsNative,
      streamer: (meta) => new CompletionsStream(meta, include_usage),
    };
    return call;
  },
};

function promptText(prompt: CompletionsRequest['prompt']): string {
  if (typeof prompt === 'string') return prompt;
  if (prompt.length === 0) return '';
  if (typeof prompt[0] === 'string') return prompt[0];
  throw invalid('token-array prompts are not supported; send the prompt as text', 'prompt');
}

function completionJson(
  completion: UpstreamCompletion,
  usage: Usage,
  meta: AnswerMeta,
): Record<string, unknown> {
  const choice = completion.choices[0]!;
  return {
    id: `cmpl-${meta.request_id}`,
    object: 'text_completion',
    created: meta.created,
    model: meta.model,
    choices: [
      {
        text: choice.message.content ?? '',
        index: 0,
        logprobs: null,
        finish_reason: choice.finish_reason === 'length' ? 'length' : 'stop',
      },
    ],
    usage: {
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.prompt_tokens + usage.completion_tokens,
    },
  };
}

class CompletionsStream implements StreamPresenter {
  readonly done_marker = true;
  private finish_reason = 'stop';

  constructor(
    private readonly meta: AnswerMeta,
    private readonly include_usage: boolean,
  ) {}

  private chunkOf(
    text: string,
    finish_reason: string | null,
    extra: Record<string, unknown> = {},
  ): SseOut {
    return {
      data: {
        id: `cmpl-${this.meta.request_id}`,
        object: 'text_completion',
        created: this.meta.created,
        model: this.meta.model,
        choices: [{ text, index: 0, logprobs: null, finish_reason }],
        ...extra,
      },
    };
  }

  start(): SseOut[] {
    return [];
  }

  chunk(chunk: UpstreamChunk): SseOut[] {
    const choice = chunk.choices?.[0];
    if (!choice) return [];
    if (choice.finish_reason)
      this.finish_reason = choice.finish_reason === 'length' ? 'length' : 'stop';
    const content = choice.delta?.content;
    return typeof content === 'string' && content ? [this.chunkOf(content, null)] : [];
  }

  finish(usage: Usage, _upstream: unknown, x_aihub: XAihub): SseOut[] {
    const total = {
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.prompt_tokens + usage.completion_tokens,
    };
    if (!this.include_usage) return [this.chunkOf('', this.finish_reason, { x_aihub })];
    return [
      this.chunkOf('', this.finish_reason),
      {
        data: {
          id: `cmpl-${this.meta.request_id}`,
          object: 'text_completion',
          created: this.meta.created,
          model: this.meta.model,
          choices: [],
          usage: total,
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
            param: null,
            code: error.code,
          },
          x_aihub,
        },
      },
    ];
  }
}

/** Legacy completions in the route table. */
export const completionsRoutes: ProtocolRoutes = {
  name: 'completions',
  native: completionsNative,
  post: { '/v1/completions': pipelineHandler(completionsProtocol) },
  docs: [
    {
      ...V1_DOC,
      method: 'post',
      path: '/v1/completions',
      summary:
        'Create a legacy completion, with suffix for fill-in-the-middle (editor autocomplete); stream: true gives text/event-stream chunks',
      body: completionsRequestSchema,
      success: {
        status: 200,
        description: `a text_completion object {id, object, choices: [{text, index, finish_reason}], usage} with x_aihub; ${HEADERS_NOTE}`,
      },
      errors: { ...BILLED_ERRORS, 400: 'invalid_value, context_length_exceeded' },
    },
  ],
};
