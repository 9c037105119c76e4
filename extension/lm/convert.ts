// The language model provider's pure part, unit-tested without VS Code: VS Code's chat messages
// (text, data/image, tool call, tool result and thinking parts) in the gateway's chat completions
// shape, the tools and tool mode, the tiers of GET /v1/models as VS Code's model information, and
// the local token estimate. Parts are recognised by their shape, not by `instanceof`: the same code
// reads the classes of any VS Code build and the plain objects of the tests.
import type OpenAI from 'openai';
import { CHARS_PER_TOKEN } from '../context/estimate.js';

type ChatMessage = OpenAI.Chat.ChatCompletionMessageParam;
type UserPart = OpenAI.Chat.ChatCompletionContentPart;

/** VS Code's LanguageModelChatMessageRole: User 1, Assistant 2, and the proposed System 3. */
export const ROLE = { user: 1, assistant: 2, system: 3 } as const;

export interface InputMessage {
  readonly role: number;
  readonly content: ReadonlyArray<unknown>;
  readonly name?: string | undefined;
}

export type Part =
  | { kind: 'text'; text: string }
  | { kind: 'thinking'; text: string }
  | { kind: 'image'; mimeType: string; data: Uint8Array }
  | { kind: 'data'; mimeType: string; data: Uint8Array }
  | { kind: 'toolCall'; callId: string; name: string; input: unknown }
  | { kind: 'toolResult'; callId: string; content: ReadonlyArray<unknown> }
  | { kind: 'unknown' };

/** How many characters an image stands for in estimates: the gateway's 765 tokens of a high-detail image. */
export const IMAGE_TOKENS = 765;
const TOKENS_PER_MESSAGE = 4;
/** Bounds of what one request may carry, as the gateway's own (512 parts a message). */
const MAX_TEXT_DEPTH = 16;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null;

/**
 * Tells a thinking part, which has the shape of a text part (`value`): the provider passes
 * `instanceof vscode.LanguageModelThinkingPart` (VS Code's builds minify class names, so the
 * name cannot tell).
 */
export type IsThinking = (part: unknown) => boolean;

/** What kind of part this is, by its shape (and `isThinking` for thinking, which looks like text). */
export function classify(part: unknown, isThinking: IsThinking = () => false): Part {
  if (!isObject(part)) return typeof part === 'string' ? { kind: 'text', text: part } : UNKNOWN;
  if (typeof part.callId === 'string' && typeof part.name === 'string' && 'input' in part)
    return { kind: 'toolCall', callId: part.callId, name: part.name, input: part.input };
  if (typeof part.callId === 'string' && Array.isArray(part.content))
    return { kind: 'toolResult', callId: part.callId, content: part.content };
  if (typeof part.mimeType === 'string' && part.data instanceof Uint8Array)
    return part.mimeType.startsWith('image/')
      ? { kind: 'image', mimeType: part.mimeType, data: part.data }
      : { kind: 'data', mimeType: part.mimeType, data: part.data };
  if (isThinking(part)) {
    const value = part.value;
    const text = Array.isArray(value) ? value.join('') : typeof value === 'string' ? value : '';
    return { kind: 'thinking', text };
  }
  if (typeof part.value === 'string') return { kind: 'text', text: part.value };
  // A prompt-tsx part (a tool's result rendered by @vscode/prompt-tsx): its text nodes.
  if (isObject(part.value)) return { kind: 'text', text: textNodes(part.value, 0) };
  return UNKNOWN;
}

const UNKNOWN: Part = { kind: 'unknown' };

function textNodes(node: unknown, depth: number): string {
  if (depth > MAX_TEXT_DEPTH) return '';
  if (typeof node === 'string') return '';
  if (Array.isArray(node)) return node.map((n) => textNodes(n, depth + 1)).join('');
  if (!isObject(node)) return '';
  let text = typeof node.text === 'string' ? node.text : '';
  for (const key of ['node', 'children']) if (key in node) text += textNodes(node[key], depth + 1);
  return text;
}

/**
 * A data part read as text where it is text (text/*, JSON); undefined for what the model cannot
 * take (VS Code's own markers such as `cache_control`, binary data).
 */
function dataText(mimeType: string, data: Uint8Array): string | undefined {
  const type = mimeType.toLowerCase().split(';')[0]!.trim();
  if (type.startsWith('text/') || type === 'application/json' || type.endsWith('+json'))
    return new TextDecoder().decode(data);
  return undefined;
}

function dataUrl(mimeType: string, data: Uint8Array): string {
  return `data:${mimeType};base64,${Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64')}`;
}

/** The text and images of a tool result's content. */
function toolResultContent(content: ReadonlyArray<unknown>): {
  text: string;
  images: Array<{ mimeType: string; data: Uint8Array }>;
} {
  let text = '';
  const images: Array<{ mimeType: string; data: Uint8Array }> = [];
  for (const raw of content) {
    const part = classify(raw);
    if (part.kind === 'text') text += part.text;
    else if (part.kind === 'image') images.push(part);
    else if (part.kind === 'data') text += dataText(part.mimeType, part.data) ?? '';
  }
  return { text, images };
}

export interface Converted {
  messages: ChatMessage[];
  /** Parts that chat completions cannot carry and were left out (counted, for the log). */
  dropped: number;
}

/**
 * VS Code's messages as chat completions messages. A user message's tool results become `tool`
 * messages right after the assistant message that made the calls (chat completions wants them
 * there); images a tool returned, which a `tool` message cannot carry, follow in a user message
 * that says whose they are; thinking parts of an assistant message go back as its
 * `reasoning_content`, as the reasoning models' chat APIs take it.
 */
export function toChatMessages(
  input: ReadonlyArray<InputMessage>,
  isThinking?: IsThinking,
): Converted {
  const out: Converted = { messages: [], dropped: 0 };
  for (const message of input) {
    const parts = message.content.map((part) => classify(part, isThinking));
    if (message.role === ROLE.assistant) addAssistant(out, parts, message.name);
    else if (message.role === ROLE.system) {
      const text = parts.map((p) => (p.kind === 'text' ? p.text : '')).join('');
      out.dropped += parts.filter((p) => p.kind !== 'text').length;
      if (text) out.messages.push({ role: 'system', content: text });
    } else addUser(out, parts, message.name);
  }
  return out;
}

function addAssistant(out: Converted, parts: Part[], name: string | undefined): void {
  let text = '';
  let reasoning = '';
  const toolCalls: OpenAI.Chat.ChatCompletionMessageToolCall[] = [];
  for (const part of parts) {
    const asText = part.kind === 'data' ? dataText(part.mimeType, part.data) : undefined;
    if (part.kind === 'text') text += part.text;
    else if (part.kind === 'thinking') reasoning += part.text;
    else if (part.kind === 'toolCall')
      toolCalls.push({
        id: part.callId,
        type: 'function',
        function: { name: part.name, arguments: JSON.stringify(part.input ?? {}) },
      });
    else if (asText !== undefined) text += asText;
    else out.dropped++;
  }
  if (!text && !toolCalls.length && !reasoning) return;
  const assistant: OpenAI.Chat.ChatCompletionAssistantMessageParam & {
    reasoning_content?: string;
  } = { role: 'assistant', content: text || null };
  if (toolCalls.length) assistant.tool_calls = toolCalls;
  if (reasoning) assistant.reasoning_content = reasoning;
  if (name) assistant.name = name;
  out.messages.push(assistant);
}

/** A user message: its tool results first, then the images they returned, then its own content. */
function addUser(out: Converted, parts: Part[], name: string | undefined): void {
  const toolImages: UserPart[] = [];
  const content: UserPart[] = [];
  for (const part of parts) {
    if (part.kind === 'toolResult') {
      const result = toolResultContent(part.content);
      out.messages.push({ role: 'tool', tool_call_id: part.callId, content: result.text });
      if (!result.images.length) continue;
      toolImages.push({
        type: 'text',
        text: `The image${result.images.length > 1 ? 's' : ''} returned by tool call ${part.callId}:`,
      });
      for (const image of result.images)
        toolImages.push({
          type: 'image_url',
          image_url: { url: dataUrl(image.mimeType, image.data) },
        });
    } else if (part.kind === 'text') {
      if (part.text) content.push({ type: 'text', text: part.text });
    } else if (part.kind === 'image') {
      content.push({ type: 'image_url', image_url: { url: dataUrl(part.mimeType, part.data) } });
    } else {
      const text = part.kind === 'data' ? dataText(part.mimeType, part.data) : undefined;
      if (text === undefined) out.dropped++;
      else content.push({ type: 'text', text });
    }
  }
  if (toolImages.length) out.messages.push({ role: 'user', content: toolImages });
  if (!content.length) return;
  const user: OpenAI.Chat.ChatCompletionUserMessageParam = {
    role: 'user',
    content: content.every((p) => p.type === 'text')
      ? content.map((p) => (p as { text: string }).text).join('')
      : content,
  };
  if (name) user.name = name;
  out.messages.push(user);
}

export interface InputTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema?: object | undefined;
}

/** VS Code's LanguageModelChatToolMode: Auto 1, Required 2. */
export const TOOL_MODE = { auto: 1, required: 2 } as const;

export function toChatTools(
  tools: ReadonlyArray<InputTool> | undefined,
  toolMode: number | undefined,
): Pick<OpenAI.Chat.ChatCompletionCreateParams, 'tools' | 'tool_choice'> {
  if (!tools?.length) return {};
  return {
    tools: tools.map((tool) => ({
      type: 'function',
      function: {
        name: tool.name,
        description: tool.description,
        parameters: (tool.inputSchema as Record<string, unknown> | undefined) ?? {
          type: 'object',
          properties: {},
        },
      },
    })),
    tool_choice: toolMode === TOOL_MODE.required ? 'required' : 'auto',
  };
}

/** A tier as GET /v1/models lists it (the fields the provider reads). */
export interface ListedModel {
  id: string;
  tier?: string;
  display_name?: string;
  context_window?: number;
  max_output_tokens?: number;
  input_modalities?: string[];
  pricing?: { input_per_million?: number; output_per_million?: number; currency?: string };
}

export interface ModelInformation {
  id: string;
  name: string;
  family: string;
  version: string;
  detail: string;
  tooltip: string;
  maxInputTokens: number;
  maxOutputTokens: number;
  capabilities: { toolCalling: boolean; imageInput: boolean };
}

/** Tiers the gateway lists without limits (an older gateway) get these. */
const DEFAULT_CONTEXT_WINDOW = 8_192;
const DEFAULT_MAX_OUTPUT = 1_024;

/**
 * A tier as VS Code's model information: its context window less its output cap as the input
 * budget (the gateway refuses a prompt that leaves no room for the answer), the output cap, tool
 * calling (every tier: the gateway carries tools on every protocol) and image input where the
 * gateway says the tier takes images (`input_modalities`).
 */
export function toModelInformation(model: ListedModel): ModelInformation {
  const context = positiveInt(model.context_window) ?? DEFAULT_CONTEXT_WINDOW;
  const output = Math.min(positiveInt(model.max_output_tokens) ?? DEFAULT_MAX_OUTPUT, context - 1);
  const tier = model.tier ?? model.id;
  const pricing = model.pricing;
  const price =
    typeof pricing?.input_per_million === 'number' && typeof pricing.output_per_million === 'number'
      ? `${pricing.input_per_million}/${pricing.output_per_million}${pricing.currency ? ` ${pricing.currency}` : ''} per 1M tokens in/out`
      : 'price not listed';
  return {
    id: model.id,
    name: `AIHub ${tier.charAt(0).toUpperCase()}${tier.slice(1)}`,
    family: tier,
    version: model.id,
    detail: price,
    tooltip: `${model.id}: ${context.toLocaleString('en-US')} tokens of context, up to ${output.toLocaleString('en-US')} out; ${price}. Billed to your AIHub wallet.`,
    maxInputTokens: context - output,
    maxOutputTokens: output,
    capabilities: {
      toolCalling: true,
      imageInput: Array.isArray(model.input_modalities) && model.input_modalities.includes('image'),
    },
  };
}

function positiveInt(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

/**
 * The local token estimate VS Code asks for (often dozens of times per request, once per piece of
 * its prompt): about four characters a token, plus the framing of a message, an image at the
 * gateway's figure. Not a request to the gateway (which would cost a round trip and a slot of the
 * key's rate limit per piece); the gateway bills the real count.
 */
export function estimateTokens(input: string | InputMessage): number {
  if (typeof input === 'string') return Math.ceil(input.length / CHARS_PER_TOKEN);
  let chars = 0;
  let images = 0;
  for (const raw of input.content) {
    const part = classify(raw);
    const counted = partChars(part);
    chars += counted.chars;
    images += counted.images;
  }
  return TOKENS_PER_MESSAGE + Math.ceil(chars / CHARS_PER_TOKEN) + images * IMAGE_TOKENS;
}

function partChars(part: Part): { chars: number; images: number } {
  switch (part.kind) {
    case 'text':
    case 'thinking':
      return { chars: part.text.length, images: 0 };
    case 'image':
      return { chars: 0, images: 1 };
    case 'data':
      return { chars: dataText(part.mimeType, part.data)?.length ?? 0, images: 0 };
    case 'toolCall':
      return { chars: part.name.length + JSON.stringify(part.input ?? {}).length, images: 0 };
    case 'toolResult': {
      const result = toolResultContent(part.content);
      return { chars: result.text.length, images: result.images.length };
    }
    default:
      return { chars: 0, images: 0 };
  }
}

/** Characters of a converted request, images at their token figure, for the spending cap's worst case. */
export function requestChars(
  messages: ReadonlyArray<ChatMessage>,
  tools: ReadonlyArray<unknown> | undefined,
): number {
  let chars = tools?.length ? JSON.stringify(tools).length : 0;
  for (const message of messages) {
    const content = (message as { content?: unknown }).content;
    if (typeof content === 'string') chars += content.length;
    else if (Array.isArray(content))
      for (const part of content as Array<{ type: string; text?: string }>)
        chars += part.type === 'text' ? (part.text ?? '').length : IMAGE_TOKENS * CHARS_PER_TOKEN;
    const calls = (message as { tool_calls?: unknown }).tool_calls;
    if (calls) chars += JSON.stringify(calls).length;
    const reasoning = (message as { reasoning_content?: unknown }).reasoning_content;
    if (typeof reasoning === 'string') chars += reasoning.length;
  }
  return chars;
}
