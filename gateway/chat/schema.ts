// The chat completion request as zod schemas: the single source of its types, its
// validation and its OpenAPI description. Known fields are checked; other OpenAI fields
// (tools, response_format, seed, ...) pass through to the upstreams that take them.
import { z } from 'zod';

const MAX_MESSAGES = 4_096;
const MAX_PARTS = 512;
const MAX_STOP = 4;

const textPart = z.strictObject({ type: z.literal('text'), text: z.string() });
const refusalPart = z.strictObject({ type: z.literal('refusal'), refusal: z.string() });
const imagePart = z.strictObject({
  type: z.literal('image_url'),
  image_url: z.strictObject({ url: z.string().min(1), detail: z.enum(['auto', 'low', 'high']).optional() }),
});
const audioPart = z.strictObject({
  type: z.literal('input_audio'),
  input_audio: z.strictObject({ data: z.string(), format: z.enum(['wav', 'mp3']) }),
});
const filePart = z.strictObject({
  type: z.literal('file'),
  file: z.strictObject({ file_data: z.string().optional(), file_id: z.string().optional(), filename: z.string().optional() }),
});

const textContent = z.union([z.string(), z.array(textPart).min(1).max(MAX_PARTS)]);
const userContent = z.union([
  z.string(),
  z.array(z.discriminatedUnion('type', [textPart, imagePart, audioPart, filePart])).min(1).max(MAX_PARTS),
]);
const assistantContent = z.union([z.string(), z.array(z.discriminatedUnion('type', [textPart, refusalPart])).min(1).max(MAX_PARTS)]);
const name = z.string().min(1).max(256).optional();

const toolCall = z.looseObject({
  id: z.string().min(1).max(256),
  type: z.literal('function'),
  function: z.strictObject({ name: z.string().min(1).max(256), arguments: z.string() }),
});

export const chatMessageSchema = z.discriminatedUnion('role', [
  z.strictObject({ role: z.literal('system'), content: textContent, name }),
  z.strictObject({ role: z.literal('developer'), content: textContent, name }),
  z.strictObject({ role: z.literal('user'), content: userContent, name }),
  z.strictObject({
    role: z.literal('assistant'),
    content: assistantContent.nullable().optional(),
    name,
    refusal: z.string().nullable().optional(),
    tool_calls: z.array(toolCall).max(128).optional(),
    audio: z.strictObject({ id: z.string() }).nullable().optional(),
  }),
  z.strictObject({ role: z.literal('tool'), content: textContent, tool_call_id: z.string().min(1).max(256) }),
]);
export type ChatMessage = z.output<typeof chatMessageSchema>;

const tokenLimit = z.int().min(1).max(10_000_000).nullable().optional();

export const chatRequestSchema = z.looseObject({
  model: z.string().min(1).max(256),
  messages: z.array(chatMessageSchema).min(1, 'must contain at least one message').max(MAX_MESSAGES),
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
  stream_options: z.strictObject({ include_usage: z.boolean().optional(), include_obfuscation: z.boolean().optional() }).nullable().optional(),
  n: z.literal(1, 'only n = 1 is supported').nullable().optional(),
  seed: z.int().nullable().optional(),
  user: z.string().max(256).optional(),
  tools: z.array(z.looseObject({ type: z.string() })).max(256).optional(),
});
export type ChatRequest = z.output<typeof chatRequestSchema>;

/** Fields the gateway decides itself; everything else in the request goes to the upstream as sent. */
export const GATEWAY_FIELDS = new Set(['model', 'stream', 'stream_options', 'max_tokens', 'max_completion_tokens', 'n']);

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
