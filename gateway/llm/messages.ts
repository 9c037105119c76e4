// A chat message as the engines speak it (OpenAI's chat completions shape): the schema the
// /v1 request validates with and the type every engine, the router and the tokenizer take.
import { z } from 'zod';

const MAX_PARTS = 512;

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
