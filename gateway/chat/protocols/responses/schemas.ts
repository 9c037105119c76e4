// The OpenAI Responses API request (`POST /v1/responses`) as zod schemas: the fields the
// gateway translates are checked; fields that only steer OpenAI's own storage or features
// the gateway does not keep (store, include, metadata, reasoning, prompt_cache_key, ...) are
// accepted and ignored, as Codex CLI and the AI SDK send them.
import { z } from 'zod';

const MAX_ITEMS = 4_096;
const MAX_PARTS = 512;
const text = z.string().max(10_000_000);

const inputText = z.looseObject({ type: z.literal('input_text'), text });
const outputText = z.looseObject({ type: z.literal('output_text'), text });
const refusal = z.looseObject({ type: z.literal('refusal'), refusal: text });
const inputImage = z.looseObject({
  type: z.literal('input_image'),
  image_url: z.string().min(1).nullable().optional(),
  file_id: z.string().nullable().optional(),
  detail: z.enum(['auto', 'low', 'high']).nullable().optional(),
});
const inputFile = z.looseObject({
  type: z.literal('input_file'),
  file_data: z.string().optional(),
  file_id: z.string().nullable().optional(),
  filename: z.string().optional(),
});
export const contentPartSchema = z.discriminatedUnion('type', [
  inputText,
  outputText,
  refusal,
  inputImage,
  inputFile,
]);

const messageItem = z.looseObject({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([text, z.array(contentPartSchema).max(MAX_PARTS)]),
});
const functionCallItem = z.looseObject({
  type: z.literal('function_call'),
  call_id: z.string().min(1).max(256),
  name: z.string().min(1).max(256),
  arguments: text,
});
const functionCallOutputItem = z.looseObject({
  type: z.literal('function_call_output'),
  call_id: z.string().min(1).max(256),
  output: z.union([text, z.array(contentPartSchema).max(MAX_PARTS)]),
});
/** Reasoning items a client sends back are the model's own notes: not forwarded. */
const reasoningItem = z.looseObject({ type: z.literal('reasoning') });

export const inputItemSchema = z.union([
  messageItem,
  functionCallItem,
  functionCallOutputItem,
  reasoningItem,
]);
export type InputItem = z.output<typeof inputItemSchema>;

const functionTool = z.looseObject({
  type: z.literal('function'),
  name: z.string().min(1).max(256),
  description: z.string().max(100_000).nullable().optional(),
  parameters: z.record(z.string(), z.unknown()).nullable().optional(),
  strict: z.boolean().nullable().optional(),
});

const toolChoice = z.union([
  z.enum(['auto', 'none', 'required']),
  z.looseObject({ type: z.literal('function'), name: z.string().min(1).max(256) }),
]);

const format = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text') }),
  z.looseObject({ type: z.literal('json_object') }),
  z.looseObject({
    type: z.literal('json_schema'),
    name: z.string().min(1).max(256),
    schema: z.record(z.string(), z.unknown()),
    description: z.string().max(100_000).optional(),
    strict: z.boolean().nullable().optional(),
  }),
]);

export const responsesRequestSchema = z.looseObject({
  model: z.string().min(1).max(256),
  input: z.union([
    text,
    z.array(inputItemSchema).min(1, 'must contain at least one item').max(MAX_ITEMS),
  ]),
  instructions: text.nullable().optional(),
  tools: z
    .array(z.looseObject({ type: z.string() }))
    .max(256)
    .optional(),
  tool_choice: toolChoice.optional(),
  parallel_tool_calls: z.boolean().nullable().optional(),
  text: z.looseObject({ format: format.optional() }).nullable().optional(),
  max_output_tokens: z.int().min(1).max(10_000_000).nullable().optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  stream: z.boolean().nullable().optional(),
  previous_response_id: z.string().max(256).nullable().optional(),
  user: z.string().max(256).optional(),
});
export type ResponsesRequest = z.output<typeof responsesRequestSchema>;
export const functionToolSchema = functionTool;
