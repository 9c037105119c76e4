// Anthropic's Messages API request (`POST /v1/messages`, `/v1/messages/count_tokens`) as zod
// schemas. Fields that steer Anthropic-only features (metadata, thinking, cache_control,
// service_tier, top_k, container, mcp_servers, context_management) are accepted and ignored.
import { z } from 'zod';

const MAX_MESSAGES = 4_096;
const MAX_BLOCKS = 512;
const text = z.string().max(10_000_000);

const textBlock = z.looseObject({ type: z.literal('text'), text });
const imageBlock = z.looseObject({
  type: z.literal('image'),
  source: z.discriminatedUnion('type', [
    z.looseObject({
      type: z.literal('base64'),
      media_type: z.enum(['image/jpeg', 'image/png', 'image/gif', 'image/webp']),
      data: z.string().min(1),
    }),
    z.looseObject({ type: z.literal('url'), url: z.string().min(1).max(100_000) }),
  ]),
});
const toolUseBlock = z.looseObject({
  type: z.literal('tool_use'),
  id: z.string().min(1).max(256),
  name: z.string().min(1).max(256),
  input: z.record(z.string(), z.unknown()),
});
const toolResultBlock = z.looseObject({
  type: z.literal('tool_result'),
  tool_use_id: z.string().min(1).max(256),
  content: z
    .union([text, z.array(z.discriminatedUnion('type', [textBlock, imageBlock])).max(MAX_BLOCKS)])
    .optional(),
  is_error: z.boolean().optional(),
});
/** The model's own thinking, sent back by clients on the next turn: not forwarded. */
const thinkingBlock = z.looseObject({ type: z.enum(['thinking', 'redacted_thinking']) });

export const blockSchema = z.discriminatedUnion('type', [
  textBlock,
  imageBlock,
  toolUseBlock,
  toolResultBlock,
  thinkingBlock,
]);
export type Block = z.output<typeof blockSchema>;

/**
 * A turn. `system` and `developer` entries are not in Anthropic's API, but Claude Code sends
 * them to models not named claude-*: they become system text at that point.
 */
export const messageSchema = z.looseObject({
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([text, z.array(blockSchema).max(MAX_BLOCKS)]),
});

const customTool = z.looseObject({
  type: z.literal('custom').optional(),
  name: z.string().min(1).max(256),
  description: z.string().max(100_000).optional(),
  input_schema: z.record(z.string(), z.unknown()),
});
/** An Anthropic-defined tool (`bash_20250124`, `web_search_20250305`, ...): its type says what it is. */
const definedTool = z.looseObject({
  type: z.string().min(1).max(100),
  name: z.string().min(1).max(256).optional(),
});

const toolChoice = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({
    type: z.literal('tool'),
    name: z.string().min(1).max(256),
    disable_parallel_tool_use: z.boolean().optional(),
  }),
  z.looseObject({ type: z.literal('none') }),
]);

const common = {
  model: z.string().min(1).max(256),
  system: z.union([text, z.array(textBlock).max(MAX_BLOCKS)]).optional(),
  messages: z.array(messageSchema).min(1, 'must contain at least one message').max(MAX_MESSAGES),
  tools: z
    .array(z.union([customTool, definedTool]))
    .max(256)
    .optional(),
  tool_choice: toolChoice.optional(),
};

export const messagesRequestSchema = z.looseObject({
  ...common,
  max_tokens: z.int().min(1).max(10_000_000),
  stop_sequences: z.array(z.string().min(1).max(1_024)).max(4).optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  stream: z.boolean().optional(),
});
export type MessagesRequest = z.output<typeof messagesRequestSchema>;

export const countTokensRequestSchema = z.looseObject(common);
export type CountTokensRequest = z.output<typeof countTokensRequestSchema>;
