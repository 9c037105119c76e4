// The gateway client: the official openai SDK pointed at the AIHub base URL (which is the proof of
// OpenAI compatibility from the client side), plus AIHub's own GET /v1/balance. Every call takes
// an AbortSignal; the callers derive it from VS Code's CancellationToken.
import OpenAI, { APIError, APIUserAbortError } from 'openai';
import type { ModelChoice, ReplyMeta } from './chat/protocol.js';
import type { ListedModel } from './lm/convert.js';
import type { KeyLimitInfo } from './keyLimit.js';

export interface Connection {
  apiBase: string;
  /** The gateway root, where pages such as /wallet live. */
  root: string;
  apiKey: string;
}

export interface ChatTurn {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ChatRequest {
  model: string;
  messages: ChatTurn[];
  maxTokens: number;
  temperature: number;
}

export interface ChatResult {
  text: string;
  finishReason: string | undefined;
  meta: ReplyMeta | undefined;
}

export interface Balance {
  balance: number;
  currency: string;
  usage?: { requests?: number; prompt_tokens?: number; completion_tokens?: number; cost?: number };
}

/** A tier's price, from GET /v1/models, in integer micro-units per million tokens. */
export interface ModelPrice {
  id: string;
  inputMicrosPerMillion: number;
  outputMicrosPerMillion: number;
  currency: string;
}

/** A non-streamed request: inline completions (chat with a FIM prompt). */
export interface CompleteRequest extends ChatRequest {
  stop?: string[];
}

/** An embeddings request: one vector per input, in input order. */
export interface EmbedRequest {
  model: string;
  input: string[];
}

export interface EmbedResult {
  vectors: Float32Array[];
  meta: ReplyMeta | undefined;
}

/** A legacy completions request with a suffix (fill-in-the-middle). */
export interface FimRequest {
  model: string;
  prompt: string;
  suffix: string;
  maxTokens: number;
  temperature: number;
  stop?: string[];
}

interface RawXAihub {
  request_id: string;
  tier: string;
  cost: number;
  balance: number;
  currency: string;
  prompt_tokens: number;
  completion_tokens: number;
  unpriced?: boolean;
}

/** One request of an agent step: the conversation so far, in the chat completions shape, and the tools. */
export interface AgentStepRequest {
  model: string;
  messages: OpenAI.Chat.ChatCompletionMessageParam[];
  tools: OpenAI.Chat.ChatCompletionTool[];
  maxTokens: number;
  temperature: number;
}

export interface AgentToolCall {
  id: string;
  name: string;
  arguments: string;
}

export interface AgentStepResult extends ChatResult {
  toolCalls: AgentToolCall[];
}

/** A request of VS Code's language model provider: converted messages, tools, the output limit. */
export interface LanguageModelRequest {
  model: string;
  messages: OpenAI.Chat.ChatCompletionMessageParam[];
  tools?: OpenAI.Chat.ChatCompletionTool[];
  toolChoice?: OpenAI.Chat.ChatCompletionToolChoiceOption;
  maxTokens: number;
  temperature?: number;
  topP?: number;
  stop?: string[];
}

/** What a stream tells as it arrives: the answer's text, and the reasoning text some models send beside it. */
export interface StreamHandlers {
  onText: (text: string) => void;
  onReasoning?: (text: string) => void;
}

/** Bounds of what one step's answer may carry. */
const MAX_TOOL_CALLS = 32;
const MAX_ARGUMENT_CHARS = 2_000_000;

const REQUEST_TIMEOUT_MS = 120_000;

export class GatewayClient {
  private readonly openai: OpenAI;

  constructor(readonly connection: Connection) {
    this.openai = new OpenAI({
      apiKey: connection.apiKey,
      baseURL: connection.apiBase,
      timeout: REQUEST_TIMEOUT_MS,
      maxRetries: 1,
    });
  }

  async streamChat(
    request: ChatRequest,
    signal: AbortSignal,
    onDelta: (text: string) => void,
  ): Promise<ChatResult> {
    const { text, finishReason, meta } = await this.stream(
      {
        model: request.model,
        messages: request.messages,
        max_tokens: request.maxTokens,
        temperature: request.temperature,
      },
      signal,
      { onText: onDelta },
    );
    return { text, finishReason, meta };
  }

  /** One step of an agent task: a streamed chat completion with tools. */
  streamAgentStep(
    request: AgentStepRequest,
    signal: AbortSignal,
    onDelta: (text: string) => void,
  ): Promise<AgentStepResult> {
    return this.stream(
      {
        model: request.model,
        messages: request.messages,
        tools: request.tools,
        tool_choice: 'auto',
        max_tokens: request.maxTokens,
        temperature: request.temperature,
      },
      signal,
      { onText: onDelta },
    );
  }

  /** A request of VS Code's chat (the language model provider): streamed, with its tools if any. */
  streamLanguageModel(
    request: LanguageModelRequest,
    signal: AbortSignal,
    handlers: StreamHandlers,
  ): Promise<AgentStepResult> {
    return this.stream(
      {
        model: request.model,
        messages: request.messages,
        ...(request.tools?.length
          ? { tools: request.tools, tool_choice: request.toolChoice ?? 'auto' }
          : {}),
        max_tokens: request.maxTokens,
        ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
        ...(request.topP !== undefined ? { top_p: request.topP } : {}),
        ...(request.stop?.length ? { stop: request.stop } : {}),
      },
      signal,
      handlers,
    );
  }

  /**
   * A streamed chat completion: the text streams through `handlers.onText`, the tool calls (if any) are
   * put together from their streamed pieces, the bill is the last chunk's `x_aihub`. Reasoning
   * text (`reasoning_content` or `reasoning` of a delta) goes to `onReasoning` when given.
   */
  private async stream(
    body: Omit<OpenAI.Chat.ChatCompletionCreateParamsStreaming, 'stream' | 'stream_options'>,
    signal: AbortSignal,
    handlers: StreamHandlers,
  ): Promise<AgentStepResult> {
    const stream = await this.openai.chat.completions.create(
      { ...body, stream: true, stream_options: { include_usage: true } },
      { signal },
    );
    let text = '';
    let finishReason: string | undefined;
    let meta: ReplyMeta | undefined;
    const calls: AgentToolCall[] = [];
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta;
      if (delta?.content) {
        text += delta.content;
        handlers.onText(delta.content);
      }
      if (handlers.onReasoning && delta) {
        const extra = delta as { reasoning_content?: unknown; reasoning?: unknown };
        const reasoning = extra.reasoning_content ?? extra.reasoning;
        if (typeof reasoning === 'string' && reasoning) handlers.onReasoning(reasoning);
      }
      for (const piece of delta?.tool_calls ?? []) {
        if (piece.index >= MAX_TOOL_CALLS) continue;
        const call = (calls[piece.index] ??= { id: '', name: '', arguments: '' });
        if (piece.id) call.id = piece.id;
        if (piece.function?.name) call.name += piece.function.name;
        if (piece.function?.arguments && call.arguments.length < MAX_ARGUMENT_CHARS)
          call.arguments += piece.function.arguments;
      }
      finishReason = chunk.choices[0]?.finish_reason ?? finishReason;
      const raw = (chunk as { x_aihub?: RawXAihub }).x_aihub;
      if (raw) meta = toMeta(raw);
    }
    // The SDK ends the iteration quietly when the request is aborted; a stop must not look like a finish.
    if (signal.aborted) throw new APIUserAbortError();
    const toolCalls = calls
      .filter((c): c is AgentToolCall => c !== undefined && c.name !== '')
      .map((c, index) => ({ ...c, id: c.id || `call_${index}` }));
    return { text, finishReason, meta, toolCalls };
  }

  /** One non-streamed chat completion (an inline completion's request). */
  async complete(request: CompleteRequest, signal: AbortSignal): Promise<ChatResult> {
    const response = await this.openai.chat.completions.create(
      {
        model: request.model,
        messages: request.messages,
        max_tokens: request.maxTokens,
        temperature: request.temperature,
        ...(request.stop?.length ? { stop: request.stop } : {}),
      },
      { signal, maxRetries: 0 },
    );
    const raw = (response as { x_aihub?: RawXAihub }).x_aihub;
    return {
      text: response.choices[0]?.message?.content ?? '',
      finishReason: response.choices[0]?.finish_reason,
      meta: raw ? toMeta(raw) : undefined,
    };
  }

  /** POST /v1/completions with `suffix`, for gateways that serve it. */
  async completeFim(request: FimRequest, signal: AbortSignal): Promise<ChatResult> {
    const response = await this.openai.completions.create(
      {
        model: request.model,
        prompt: request.prompt,
        suffix: request.suffix,
        max_tokens: request.maxTokens,
        temperature: request.temperature,
        ...(request.stop?.length ? { stop: request.stop } : {}),
      },
      { signal, maxRetries: 0 },
    );
    const raw = (response as { x_aihub?: RawXAihub }).x_aihub;
    return {
      text: response.choices[0]?.text ?? '',
      finishReason: response.choices[0]?.finish_reason,
      meta: raw ? toMeta(raw) : undefined,
    };
  }

  /**
   * POST /v1/embeddings. Asks for base64 (little-endian float32, a quarter of the JSON's size) and
   * decodes it straight into Float32Arrays; a gateway that answers with number arrays works too.
   */
  async embed(request: EmbedRequest, signal: AbortSignal): Promise<EmbedResult> {
    const response = await this.openai.embeddings.create(
      { model: request.model, input: request.input, encoding_format: 'base64' },
      { signal, maxRetries: 1 },
    );
    const data = [...response.data].sort((a, b) => a.index - b.index);
    if (data.length !== request.input.length)
      throw new Error(
        `the gateway answered ${data.length} embeddings for ${request.input.length} inputs`,
      );
    const raw = (response as { x_aihub?: RawXAihub }).x_aihub;
    return {
      vectors: data.map((item) => toFloat32(item.embedding as unknown)),
      meta: raw ? toMeta(raw) : undefined,
    };
  }

  /**
   * Whether the gateway serves POST /v1/completions: an empty body is answered 400 (invalid
   * request) where the route exists, 404 not_found where it does not. Costs nothing either way.
   */
  async servesCompletions(signal: AbortSignal): Promise<boolean> {
    try {
      await this.openai.post('/completions', { body: {}, signal, maxRetries: 0 });
      return true;
    } catch (error) {
      const status = (error as { status?: unknown }).status;
      if (status === 400 || status === 422) return true;
      if (status === 404 || status === 405) return false;
      throw error;
    }
  }

  async prices(signal?: AbortSignal): Promise<ModelPrice[]> {
    const page = await this.openai.models.list(signal ? { signal } : {});
    const out: ModelPrice[] = [];
    for (const model of page.data) {
      const pricing = (
        model as {
          pricing?: {
            input_per_million?: unknown;
            output_per_million?: unknown;
            currency?: unknown;
          };
        }
      ).pricing;
      if (
        typeof pricing?.input_per_million !== 'number' ||
        typeof pricing.output_per_million !== 'number'
      )
        continue;
      out.push({
        id: model.id,
        inputMicrosPerMillion: Math.round(pricing.input_per_million * 1_000_000),
        outputMicrosPerMillion: Math.round(pricing.output_per_million * 1_000_000),
        currency: typeof pricing.currency === 'string' ? pricing.currency : 'INR',
      });
    }
    return out;
  }

  async balance(signal?: AbortSignal): Promise<Balance> {
    return this.openai.get<Balance>('/balance', signal ? { signal } : {});
  }

  /** GET /v1/key: the key's own limit and what is left of it (undefined from a gateway without it). */
  async keyLimit(signal?: AbortSignal): Promise<KeyLimitInfo | undefined> {
    try {
      const reply = await this.openai.get<{ data?: KeyLimitInfo }>(
        '/key',
        signal ? { signal } : {},
      );
      return reply.data;
    } catch (error) {
      if (error instanceof APIError && error.status === 404) return undefined;
      throw error;
    }
  }

  /** GET /v1/models as the gateway lists the tiers (limits, prices, modalities). */
  async listedModels(signal?: AbortSignal): Promise<ListedModel[]> {
    const page = await this.openai.models.list(signal ? { signal } : {});
    return page.data as unknown as ListedModel[];
  }

  async models(signal?: AbortSignal): Promise<ModelChoice[]> {
    const page = await this.openai.models.list(signal ? { signal } : {});
    return page.data.map((model) => ({ id: model.id, label: describeModel(model) }));
  }
}

function toMeta(raw: RawXAihub): ReplyMeta {
  return {
    requestId: raw.request_id,
    tier: raw.tier,
    cost: Number(raw.cost),
    balance: Number(raw.balance),
    currency: raw.currency,
    promptTokens: Number(raw.prompt_tokens ?? 0),
    completionTokens: Number(raw.completion_tokens ?? 0),
    ...(raw.unpriced === true ? { unpriced: true as const } : {}),
  };
}

/** An embedding as base64 little-endian float32 or as an array of numbers. */
function toFloat32(embedding: unknown): Float32Array {
  if (typeof embedding === 'string') {
    const bytes = Buffer.from(embedding, 'base64');
    if (bytes.length % 4 !== 0) throw new Error('an embedding is not a whole number of floats');
    const vector = new Float32Array(bytes.length / 4);
    for (let i = 0; i < vector.length; i++) vector[i] = bytes.readFloatLE(i * 4);
    return vector;
  }
  if (Array.isArray(embedding) && embedding.every((v) => typeof v === 'number'))
    return Float32Array.from(embedding);
  throw new Error('an embedding is neither base64 nor an array of numbers');
}

function describeModel(model: OpenAI.Models.Model): string {
  const pricing = (
    model as {
      pricing?: { input_per_million?: number; output_per_million?: number; currency?: string };
    }
  ).pricing;
  if (!pricing || pricing.input_per_million === undefined) return model.id;
  return `${model.id} (${pricing.input_per_million}/${pricing.output_per_million} ${pricing.currency ?? ''} per 1M tokens in/out)`.replace(
    ' )',
    ')',
  );
}
