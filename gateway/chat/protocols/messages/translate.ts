// Anthropic's Messages API to chat completions and back: `system` becomes a system message,
// and so does a `system` or `developer` entry among the messages, at its place (after the
// tool results of a call it follows, as chat requires); text and image blocks become chat
// content parts, tool_use blocks assistant tool calls and tool_result blocks tool messages
// (placed right after the call); tools (tools.ts), tool_choice and stop_sequences their chat
// forms. The chat answer becomes content blocks (thinking, text, tool_use) with a
// stop_reason and Anthropic usage. Refusals are worded as Anthropic's API words them.
import { ApiError } from '../../../http/errors.js';
import { TIER_IDS } from '../../config.js';
import { ContextLengthError, ModelNotFoundError } from '../../refusals.js';
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
} from '../../protocol.js';
import {
  countTokensRequestSchema,
  messagesRequestSchema,
  type Block,
  type CountTokensRequest,
  type MessagesRequest,
} from './schemas.js';
import { MessagesStream } from './stream.js';
import { anthropicUsage, matchedStop, stopReason } from './present.js';
import { chatTools } from './tools.js';
import { messagesNative } from './native.js';
import { anthropicWording } from './wording.js';

export const messagesProtocol: Protocol = {
  name: 'messages',
  parse(raw) {
    const body = parseBody(messagesRequestSchema, raw, anthropicWording);
    const { params, warnings } = toParams(body);
    const call: ChatCall = {
      protocol: 'messages',
      model: body.model,
      messages: toMessages(body),
      params,
      stream: body.stream === true,
      choices: 1,
      requested_max: body.max_tokens,
      cap_field: 'max_tokens',
      original: nativeBody(raw as Record<string, unknown>, body),
      warnings,
      json: (completion, usage, meta) => messageJson(completion, usage, meta, body.stop_sequences),
      bill_in_body: false,
      native: messagesNative,
      streamer: (meta) => new MessagesStream(meta, body.stop_sequences),
    };
    return call;
  },
  error: anthropicError,
};

/**
 * A refusal as Anthropic's API words it, where clients read the words: Claude Code compacts
 * the conversation on "prompt is too long: N tokens > M maximum" and falls back to another
 * model on a 404 whose message starts "model:". Anthropic's SDKs read 529 as "overloaded":
 * the status for no upstream available.
 */
export function anthropicError(error: ApiError): ApiError {
  const again = (status: number, message: string, type: string | null = error.type) =>
    new ApiError(status, error.code, message, error.param, type, error.headers);
  if (error instanceof ContextLengthError)
    return again(
      400,
      `prompt is too long: ${error.prompt_tokens} tokens > ${error.max_prompt_tokens} maximum`,
    );
  if (error.code === 'context_length_exceeded' && error.status === 400)
    return again(400, promptTooLong(error.message));
  if (error instanceof ModelNotFoundError)
    return again(
      404,
      `model: ${error.model.slice(0, 100)} (this gateway serves ${TIER_IDS.join(', ')})`,
    );
  if (error.status === 503) return again(529, error.message, 'overloaded_error');
  return error;
}

/** An upstream's context-length refusal in Anthropic's words, with its figures when it gave them. */
function promptTooLong(message: string): string {
  const limit = /maximum context length is (\d+)/i.exec(message)?.[1];
  const used = /resulted in (\d+) tokens/i.exec(message)?.[1];
  return limit && used
    ? `prompt is too long: ${used} tokens > ${limit} maximum`
    : `prompt is too long (${message.slice(0, 300)})`;
}

/** `POST /v1/messages/count_tokens`: the prompt's tokens as the gateway estimates (and holds) them. */
export function countTokens(raw: unknown): { input_tokens: number } {
  const body = parseBody(countTokensRequestSchema, raw, anthropicWording);
  const { params } = toParams(body);
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
  // System text that follows a tool call waits for the call's results: chat wants the tool
  // messages right after the assistant message that made the calls.
  let waiting: ChatMessage[] = [];
  body.messages.forEach((message, index) => {
    const param = `messages.${index}.content`;
    if (message.role === 'system' || message.role === 'developer') {
      const system: ChatMessage = { role: 'system', content: systemText(message.content, param) };
      const last = messages.at(-1);
      if (waiting.length || (last?.role === 'assistant' && last.tool_calls?.length))
        waiting.push(system);
      else messages.push(system);
      return;
    }
    const turn =
      typeof message.content === 'string'
        ? [
            message.role === 'user'
              ? ({ role: 'user', content: message.content } as const)
              : ({ role: 'assistant', content: message.content } as const),
          ]
        : message.role === 'assistant'
          ? [assistantMessage(message.content, param)]
          : userMessages(message.content, param);
    // The call's results come first in the next user turn; the system text then.
    const results = turn.filter((out) => out.role === 'tool');
    messages.push(...results, ...waiting, ...turn.filter((out) => out.role !== 'tool'));
    waiting = [];
  });
  messages.push(...waiting);
  return messages;
}

/** The text of a `system` / `developer` entry: a string or text blocks. */
function systemText(content: string | Block[], param: string): string {
  if (typeof content === 'string') return content;
  return content
    .map((block) => {
      if (block.type !== 'text')
        throw invalid(`${param}: a ${block.type} block cannot be system text`, param);
      return block.text;
    })
    .join('\n\n');
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
      throw invalid(`${param}: an assistant message cannot carry ${block.type} blocks`, param);
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
      throw invalid(`${param}: a user message cannot carry tool_use blocks`, param);
  }
  if (parts.length) out.push({ role: 'user', content: parts });
  if (!out.length)
    throw invalid(
      `${param}: a user message needs at least one text, image or tool_result block`,
      param,
    );
  return out;
}

function imagePart(block: Extract<Block, { type: 'image' }>): UserPart {
  const source = block.source;
  const url =
    source.type === 'base64' ? `data:${source.media_type};base64,${source.data}` : source.url;
  return { type: 'image_url', image_url: { url } };
}

function toParams(body: CountTokensRequest & Partial<MessagesRequest>): {
  params: Record<string, unknown>;
  warnings: string[];
} {
  const params: Record<string, unknown> = {};
  const tools = chatTools(body.tools ?? []);
  if (tools.functions.length) params.tools = tools.functions;
  const choice = body.tool_choice;
  if (choice) {
    if (choice.type === 'tool' && tools.dropped.includes(choice.name))
      throw invalid(
        `tool_choice.name: the tool \`${choice.name.slice(0, 100)}\` is not available through this gateway`,
        'tool_choice.name',
      );
    if (choice.type === 'auto') params.tool_choice = 'auto';
    else if (choice.type === 'any') params.tool_choice = 'required';
    else if (choice.type === 'none') params.tool_choice = 'none';
    else params.tool_choice = { type: 'function', function: { name: choice.name } };
    if (choice.type !== 'none' && choice.disable_parallel_tool_use && params.tools)
      params.parallel_tool_calls = false;
    // Forcing a tool with none left to call would be refused upstream: no tools, no choice.
    if (!params.tools) delete params.tool_choice;
  }
  if (body.stop_sequences?.length) params.stop = body.stop_sequences;
  if (body.temperature !== undefined) params.temperature = body.temperature;
  if (body.top_p !== undefined) params.top_p = body.top_p;
  return { params, warnings: tools.warnings };
}

/**
 * The request for a target that speaks Messages natively: as it came, but a system entry
 * among the messages (which Anthropic's API refuses) becomes a user turn of
 * `<system-reminder>` text, as Claude Code writes system notes for Claude models.
 */
function nativeBody(raw: Record<string, unknown>, body: MessagesRequest): Record<string, unknown> {
  if (!body.messages.some((m) => m.role === 'system' || m.role === 'developer')) return raw;
  return {
    ...raw,
    messages: body.messages.map((message, index) =>
      message.role === 'system' || message.role === 'developer'
        ? {
            role: 'user',
            content: [
              {
                type: 'text',
                text: `<system-reminder>\n${systemText(message.content, `messages.${index}.content`)}\n</system-reminder>`,
              },
            ],
          }
        : message,
    ),
  };
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
