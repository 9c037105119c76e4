// The chat completion request as zod schemas: the single source of its types, its
// validation and its OpenAPI description. Known fields are checked; other OpenAI fields
// (tools, response_format, seed, ...) pass through to the upstreams that take them.
import { z } from 'zod';
import { chatMessageSchema } from '../llm/messages.js';

const MAX_MESSAGES = 4_096;
const MAX_STOP = 4;
/** Choices per request: each is generated and billed, and the hold covers all of them. */
const MAX_CHOICES = 8;

const tokenLimit = z.int().min(1).max(10_000_000).nullable().optional();

export const chatRequestSchema = z.looseObject({
  model: z.string().min(1).max(256),
  messages: z
    .array(chatMessageSchema)
    .min(1, 'must contain at least one message')
    .max(MAX_MESSAGES),
  max_tokens: tokenLimit,
  max_completion_tokens: tokenLimit,
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  frequency_penalty: z.number().min(-2).max(2).nullable().optional(),
  presence_penalty: z.number().min(-2).max(2).nullable().optional(),
  stop: z
    .union([z.string().max(1_024), z.array(z.string().max(1_024)).max(MAX_STOP)])
    .nullable()
    .optional(),
  stream: z.boolean().nullable().optional(),
  stream_options: z
    .strictObject({
      include_usage: z.boolean().optional(),
      include_obfuscation: z.boolean().optional(),
    })
    .nullable()
    .optional(),
  n: z.int().min(1).max(MAX_CHOICES).nullable().optional(),
  logprobs: z.boolean().nullable().optional(),
  top_logprobs: z.int().min(0).max(20).nullable().optional(),
  seed: z.int().nullable().optional(),
  user: z.string().max(256).optional(),
  tools: z
    .array(z.looseObject({ type: z.string() }))
    .max(256)
    .optional(),
});
export type ChatRequest = z.output<typeof chatRequestSchema>;

/** Fields the gateway decides itself; everything else in the request goes to the upstream as sent. */
export const GATEWAY_FIELDS = new Set([
  'model',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
]);

/**
 * OpenAI-style `param` for a zod issue path: `messages[0].content`.
 */
export function paramOf(path: ReadonlyArray<PropertyKey>): string | null {
  let param = '';
  for (const segment of path) {
    if (typeof segment === 'number') param += `[${segment}]`;
    else param += param ? `.${String(segment)}` : String(segment);
  }
  return param || null;
}
