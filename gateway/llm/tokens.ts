// Token counting with a real BPE tokenizer (cl100k_base, GPT-4's encoding). It is the
// estimate behind every hold and the count behind every bill an upstream leaves without
// `usage`. cl100k keeps the gateway bundle small (o200k's tables are 2.7 MB) and counts
// within a few percent of o200k on English and code.
import { countTokens } from 'gpt-tokenizer/encoding/cl100k_base';
import type { ChatMessage } from './messages.js';

// Special-token text such as `<|endoftext|>` in a user message is counted as plain text.
const ENCODE_OPTIONS = { disallowedSpecial: new Set<string>() };

// OpenAI's accounting for chat: each message costs its content plus a few framing tokens,
// and the reply is primed with three more.
const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_NAME = 1;
const TOKENS_REPLY_PRIMING = 3;
/** A high-detail image of typical size (OpenAI: 85 + 170 per 512-px tile, 4 tiles); upstreams report the real figure in `usage`. */
const TOKENS_PER_IMAGE = 765;
/** A `detail: "low"` image: OpenAI's flat 85. */
const TOKENS_PER_LOW_DETAIL_IMAGE = 85;
const TOKENS_PER_AUDIO_OR_FILE = 1_000;

/** What a model writes for its tool calls: each function's name and arguments (the JSON around them is framing). */
export function toolCallText(tool_calls: unknown): string {
  if (!Array.isArray(tool_calls)) return '';
  let text = '';
  for (const call of tool_calls) {
    const fn = (call as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
    if (typeof fn?.name === 'string') text += fn.name;
    if (typeof fn?.arguments === 'string') text += fn.arguments;
  }
  return text;
}

export function countTextTokens(text: string): number {
  if (text.length === 0) return 0;
  return countTokens(text, ENCODE_OPTIONS);
}

function contentTokens(content: ChatMessage['content']): number {
  if (content == null) return 0;
  if (typeof content === 'string') return countTextTokens(content);
  let tokens = 0;
  for (const part of content) {
    switch (part.type) {
      case 'text':
        tokens += countTextTokens(part.text);
        break;
      case 'refusal':
        tokens += countTextTokens(part.refusal);
        break;
      case 'image_url':
        tokens += part.image_url.detail === 'low' ? TOKENS_PER_LOW_DETAIL_IMAGE : TOKENS_PER_IMAGE;
        break;
      default:
        tokens += TOKENS_PER_AUDIO_OR_FILE;
    }
  }
  return tokens;
}

/** Prompt tokens of a chat request: messages, plus tool definitions when the request carries them. */
export function countPromptTokens(messages: readonly ChatMessage[], tools?: unknown): number {
  let tokens = TOKENS_REPLY_PRIMING;
  for (const message of messages) {
    tokens += TOKENS_PER_MESSAGE + 1 /* role */ + contentTokens(message.content);
    if ('name' in message && message.name)
      tokens += TOKENS_PER_NAME + countTextTokens(message.name);
    if ('tool_calls' in message && message.tool_calls)
      tokens += countTextTokens(JSON.stringify(message.tool_calls));
  }
  if (tools !== undefined && tools !== null) tokens += countTextTokens(JSON.stringify(tools));
  return tokens;
}
