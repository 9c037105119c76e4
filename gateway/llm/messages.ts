// A chat message as the engines speak it (OpenAI's chat completions shape): the schema the
// /v1 request validates with and the type every engine, the router and the tokenizer take.
// The gateway checks what it needs (roles, content types, sizes) and passes every other
// field through untouched: a message appended from an earlier answer carries fields such as
// `annotations`, `reasoning_content`, `parsed` or `function_call: null`, providers add their
// own (`prefix` on an assistant message, `cache_control` on a part), and refusing them
// breaks the second turn of every conversation.
import { z } from 'zod';

const MAX_PARTS = 512;

const textPart = z.looseObject({ type: z.literal('text'), text: z.string() });
const refusalPart = z.looseObject({ type: z.literal('refusal'), refusal: z.string() });
const imagePart = z.looseObject({
  type: z.literal('image_url'),
  image_url: z.looseObject({
    url: z.string().min(1),
    detail: z.enum(['auto', 'low', 'high']).optional(),
  }),
});
const audioPart = z.looseObject({
  type: z.literal('input_audio'),
  input_audio: z.looseObject({ data: z.string(), format: z.string().min(1).max(32) }),
});
const filePart = z.looseObject({
  type: z.literal('file'),
  file: z.looseObject({
    file_data: z.string().optional(),
    file_id: z.string().optional(),
    filename: z.string().optional(),
  }),
});

const textContent = z.union([z.string(), z.array(textPart).min(1).max(MAX_PARTS)]);
const userContent = z.union([
  z.string(),
  z
    .array(z.discriminatedUnion('type', [textPart, imagePart, audioPart, filePart]))
    .min(1)
    .max(MAX_PARTS),
]);
const assistantContent = z.union([
  z.string(),
  z
    .array(z.discriminatedUnion('type', [textPart, refusalPart]))
    .min(1)
    .max(MAX_PARTS),
]);
const name = z.string().min(1).max(256).optional();

const toolCall = z.looseObject({
  id: z.string().min(1).max(256),
  type: z.literal('function'),
  function: z.looseObject({ name: z.string().min(1).max(256), arguments: z.string() }),
});

export const chatMessageSchema = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content: textContent, name }),
  z.looseObject({ role: z.literal('developer'), content: textContent, name }),
  z.looseObject({ role: z.literal('user'), content: userContent, name }),
  z.looseObject({
    role: z.literal('assistant'),
    content: assistantContent.nullable().optional(),
    name,
    refusal: z.string().nullable().optional(),
    tool_calls: z.array(toolCall).max(128).nullable().optional(),
    function_call: z
      .looseObject({ name: z.string().max(256), arguments: z.string() })
      .nullable()
      .optional(),
  }),
  z.looseObject({
    role: z.literal('tool'),
    content: textContent,
    tool_call_id: z.string().min(1).max(256),
    name,
  }),
]);
export type ChatMessage = z.output<typeof chatMessageSchema>;
