// Anthropic's Messages API to chat completions and back: `system` becomes a system message,
// text and image blocks chat content parts, tool_use blocks assistant tool calls and
// tool_result blocks tool messages (placed right after the call, as chat requires); tools,
// tool_choice and stop_sequences their chat forms. The chat answer becomes content blocks
// (thinking, text, tool_use) with a stop_reason and Anthropic usage.
import { ApiError } from '../../../http/errors.js';
import type { ChatMessage } from '../../../llm/messages.js';
import { countPromptTokens } from '../../../llm/tokens.js';
import type { UpstreamCompletion } from '../../../llm/types.js';
import { argumentsObject, invalid, parseBody } from '../parse.js';
import {
  reasoningOf,
  toolCallsOf,
  type AnswerMeta,
  type ChatCall,
  type Protocol,
  type Usage,
} from '../types.js';
import {
  countTokensRequestSchema,
  messagesRequestSchema,
  type Block,
  type CountTokensRequest,
  type MessagesRequest,
} from './schemas.js';
import { MessagesStream } from './stream.js';
import { anthropicUsage, matchedStop, stopReason } from './present.js';

export const messagesProtocol: Protocol = {
  name: 'messages',
  parse(raw) {
    const body = parseBody(messagesRequestSchema, raw);
    const call: ChatCall = {
      protocol: 'messages',
      model: body.model,
      messages: toMessages(body),
      params: toParams(body),
      stream: body.stream === true,
      choices: 1,
      requested_max: body.max_tokens,
      cap_field: 'max_tokens',
      original: raw as Record<string, unknown>,
      json: (completion, usage, meta) => messageJson(completion, usage, meta, body.stop_sequences),
      bill_in_body: false,
      streamer: (meta) => new MessagesStream(meta, body.stop_sequences),
    };
    return call;
  },
  error: anthropicStatus,
};

/** Anthropic's SDKs read 529 as "overloaded": the status for no upstream available. */
function anthropicStatus(error: ApiError): ApiError {
  if (error.status !== 503) return error;
  return new ApiError(
    529,
    error.code,
    error.message,
    error.param,
    'overloaded_error',
    error.headers,
  );
}

/** `POST /v1/messages/count_tokens`: the prompt's tokens as the gateway estimates (and holds) them. */
export function countTokens(raw: unknown): { input_tokens: number } {
  const body = parseBody(countTokensRequestSchema, raw);
  const params = toParams(body);
  return { input_tokens: countPromptTokens(toMessages(body), params.tools) };
}

type UserPart = Exclude<Extract<ChatMessage, { role: 'user' }>['content'], string>[number];

function toMessages(body: CountTokensRequest): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (typeof body.system === 'string' ? body.system : body.system?.length) {
    messages.push({
      role: 'system',
      content:
        typeof body.system === 'string'
          ? body.system
          : body.system!.map((block) => block.text).join('\n\n'),
    });
  }
  body.messages.forEach((message, index) => {
    const param = `messages[${index}].content`;
    if (typeof message.content === 'string') {
      messages.push(
        message.role === 'user'
          ? { role: 'user', content: message.content }
          : { role: 'assistant', content: message.content },
      );
      return;
    }
    if (message.role === 'assistant') messages.push(assistantMessage(message.content, param));
    else messages.push(...userMessages(message.content, param));
  });
  return messages;
}

function assistantMessage(blocks: Block[], param: string): ChatMessage {
  let text = '';
  const tool_calls: {
    id: string;
    type: 'function';
    function: { name: string; arguments: string };
  }[] = [];
  for (const block of blocks) {
    if (block.type === 'text') text += block.text;
    else if (block.type === 'tool_use')
      tool_calls.push({
        id: block.id,
        type: 'function',
        function: { name: block.name, arguments: JSON.stringify(block.input) },
      });
    else if (block.type === 'image' || block.type === 'tool_result')
      throw invalid(`an assistant message cannot carry ${block.type} blocks`, param);
  }
  return { role: 'assistant', content: text || null, ...(tool_calls.length ? { tool_calls } : {}) };
}

function userMessages(blocks: Block[], param: string): ChatMessage[] {
  const out: ChatMessage[] = [];
  const parts: UserPart[] = [];
  for (const block of blocks) {
    if (block.type === 'text') parts.push({ type: 'text', text: block.text });
    else if (block.type === 'image') parts.push(imagePart(block));
    else if (block.type === 'tool_result') {
      const content =
        typeof block.content === 'string'
          ? block.content
          : (block.content ?? [])
              .map((part) => (part.type === 'text' ? part.text : '[image]'))
              .join('\n');
      out.push({
        role: 'tool',
        tool_call_id: block.tool_use_id,
        content: block.is_error ? `Error: ${content}` : content,
      });
    } else if (block.type === 'tool_use')
      throw invalid('a user message cannot carry tool_use blocks', param);
  }
  if (parts.length) out.push({ role: 'user', content: parts });
  if (!out.length)
    throw invalid('a user message needs at least one text, image or tool_result block', param);
  return out;
}

function imagePart(block: Extract<Block, { type: 'image' }>): UserPart {
  const source = block.source;
  const url =
    source.type === 'base64' ? `data:${source.media_type};base64,${source.data}` : source.url;
  return { type: 'image_url', image_url: { url } };
}

function toParams(body: CountTokensRequest & Partial<MessagesRequest>): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  if (body.tools?.length) {
    params.tools = body.tools.map((tool) => ({
      type: 'function',
      function: {
        name: tool.name,
        ...(tool.description ? { description: tool.description } : {}),
        parameters: tool.input_schema,
      },
    }));
  }
  const choice = body.tool_choice;
  if (choice) {
    if (choice.type === 'auto') params.tool_choice = 'auto';
    else if (choice.type === 'any') params.tool_choice = 'required';
    else if (choice.type === 'none') params.tool_choice = 'none';
    else params.tool_choice = { type: 'function', function: { name: choice.name } };
    if (choice.type !== 'none' && choice.disable_parallel_tool_use && params.tools)
      params.parallel_tool_calls = false;
  }
  if (body.stop_sequences?.length) params.stop = body.stop_sequences;
  if (body.temperature !== undefined) params.temperature = body.temperature;
  if (body.top_p !== undefined) params.top_p = body.top_p;
  return params;
}

function messageJson(
  completion: UpstreamCompletion,
  usage: Usage,
  meta: AnswerMeta,
  stop_sequences: readonly string[] | undefined,
): Record<string, unknown> {
  const choice = completion.choices[0]!;
  const stop_sequence =
    choice.finish_reason === 'stop' ? matchedStop(choice, stop_sequences) : null;
  const content: Record<string, unknown>[] = [];
  const reasoning = reasoningOf(choice.message);
  if (reasoning) content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  if (choice.message.content) content.push({ type: 'text', text: choice.message.content });
  for (const call of toolCallsOf(choice.message)) {
    content.push({
      type: 'tool_use',
      id: call.id ?? `toolu_${meta.request_id}_${content.length}`,
      name: call.function?.name ?? '',
      input: argumentsObject(call.function?.arguments),
    });
  }
  // The bill rides in the x-aihub-* headers: Anthropic's clients read a closed shape.
  return {
    id: `msg_${meta.request_id}`,
    type: 'message',
    role: 'assistant',
    model: meta.model,
    content,
    stop_reason: stopReason(choice.finish_reason, stop_sequence),
    stop_sequence,
    usage: anthropicUsage(usage, completion.usage),
  };
}
