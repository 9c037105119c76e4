// Google's Gemini API to chat completions: `systemInstruction` becomes a system message,
// `contents` turns (user / model) chat messages, text and inline data content parts,
// functionCall parts assistant tool calls and functionResponse parts tool messages (placed
// right after their call, as chat requires); functionDeclarations function tools (Gemini's
// schema subset made JSON Schema), toolConfig a tool_choice, generationConfig the sampling
// fields, the output cap, stop sequences, candidates and a JSON response format. What has no
// meaning here (safety settings, cached content, tools Google runs on its side) is dropped
// and named in the answer's x-aihub-warning header.
import type { ChatMessage } from '../../../llm/messages.js';
import { countPromptTokens } from '../../../llm/tokens.js';
import { invalid, parseBody } from '../parse.js';
import type { ChatCall } from '../../protocol.js';
import { toJsonSchema } from './json-schema.js';
import { geminiNative } from './native.js';
import { geminiJson } from './present.js';
import {
  countTokensRequestSchema,
  generateRequestSchema,
  type Content,
  type GenerateRequest,
  type Part,
  type Tool,
} from './schemas.js';
import { GeminiStream, JSON_ARRAY_FRAMING } from './stream.js';

type UserPart = Exclude<Extract<ChatMessage, { role: 'user' }>['content'], string>[number];
type ToolCall = { id: string; type: 'function'; function: { name: string; arguments: string } };

/** What a Gemini route knows besides the body: the model of its path and how it streams. */
export interface GeminiRoute {
  model: string;
  stream: 'sse' | 'json-array' | null;
}

export function parseGenerate(raw: unknown, route: GeminiRoute): ChatCall {
  const body = parseBody(generateRequestSchema, raw);
  const warnings: string[] = [];
  const messages = toMessages(body, warnings);
  const params = toParams(body, warnings);
  const include_thoughts = body.generationConfig?.thinkingConfig?.includeThoughts === true;
  const candidates = body.generationConfig?.candidateCount ?? 1;
  return {
    protocol: 'gemini',
    model: route.model,
    messages,
    params,
    stream: route.stream !== null,
    choices: candidates,
    requested_max: body.generationConfig?.maxOutputTokens ?? null,
    cap_field: 'generationConfig.maxOutputTokens',
    original: raw as Record<string, unknown>,
    warnings,
    json: (completion, usage, meta) => geminiJson(completion, usage, meta, include_thoughts),
    bill_in_body: true,
    streamer: (meta) => new GeminiStream(meta, include_thoughts),
    ...(route.stream === 'json-array' ? { framing: JSON_ARRAY_FRAMING } : {}),
    native: geminiNative,
  };
}

/** `:countTokens`: the prompt's tokens as the gateway estimates (and would hold) them. */
export function countTokens(raw: unknown): Record<string, unknown> {
  const body = parseBody(countTokensRequestSchema, raw);
  const request = body.generateContentRequest ?? { contents: body.contents ?? [] };
  const ignored: string[] = [];
  const messages = toMessages(request as GenerateRequest, ignored);
  const params = toParams(request as GenerateRequest, ignored);
  const total = countPromptTokens(messages, params.tools);
  return { totalTokens: total, promptTokensDetails: [{ modality: 'TEXT', tokenCount: total }] };
}

function toMessages(body: GenerateRequest, warnings: string[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  const system = systemText(body.systemInstruction);
  if (system) messages.push({ role: 'system', content: system });
  /** Calls the model made that no functionResponse has answered yet, oldest first. */
  const open: ToolCall[] = [];
  body.contents.forEach((content, turn) => {
    const param = `contents[${turn}]`;
    if (content.role === 'model') {
      const message = modelMessage(content, turn, param);
      open.length = 0;
      open.push(...(message.tool_calls ?? []));
      if (message.content !== null || message.tool_calls) messages.push(message);
      return;
    }
    messages.push(...userMessages(content, open, param, warnings));
  });
  if (!messages.some((message) => message.role !== 'system'))
    throw invalid('contents must hold at least one part with text or data', 'contents');
  return messages;
}

function systemText(system: GenerateRequest['systemInstruction']): string {
  if (system === undefined) return '';
  if (typeof system === 'string') return system;
  return system.parts
    .filter((part) => typeof part.text === 'string' && part.thought !== true)
    .map((part) => part.text)
    .join('\n');
}

function modelMessage(
  content: Content,
  turn: number,
  param: string,
): Extract<ChatMessage, { role: 'assistant' }> & { tool_calls?: ToolCall[] } {
  let text = '';
  const tool_calls: ToolCall[] = [];
  content.parts.forEach((part, index) => {
    if (part.thought === true) return;
    if (typeof part.text === 'string') text += part.text;
    else if (part.functionCall)
      tool_calls.push({
        id: part.functionCall.id || `call_${turn}_${index}`,
        type: 'function',
        function: {
          name: part.functionCall.name,
          arguments: JSON.stringify(part.functionCall.args ?? {}),
        },
      });
    else if (part.functionResponse || part.inlineData || part.fileData)
      throw invalid(
        'a model turn carries text and functionCall parts only',
        `${param}.parts[${index}]`,
      );
  });
  return {
    role: 'assistant',
    content: text || null,
    ...(tool_calls.length ? { tool_calls } : {}),
  };
}

/** A user turn: its function responses first (as tool messages after their calls), then its text and data. */
function userMessages(
  content: Content,
  open: ToolCall[],
  param: string,
  warnings: string[],
): ChatMessage[] {
  const out: ChatMessage[] = [];
  const parts: UserPart[] = [];
  content.parts.forEach((part, index) => {
    const where = `${param}.parts[${index}]`;
    if (part.thought === true) return;
    if (part.functionResponse) {
      out.push(toolMessage(part.functionResponse, open, where));
      return;
    }
    if (part.functionCall) throw invalid('a user turn cannot carry functionCall parts', where);
    const converted = userPart(part, where);
    if (converted) parts.push(converted);
    else if (part.executableCode || part.codeExecutionResult)
      note(warnings, 'code execution parts are not forwarded');
  });
  if (parts.length) out.push({ role: 'user', content: parts });
  return out;
}

function toolMessage(
  response: NonNullable<Part['functionResponse']>,
  open: ToolCall[],
  where: string,
): ChatMessage {
  const at = open.findIndex((call) =>
    response.id ? call.id === response.id : call.function.name === response.name,
  );
  const fallback = at === -1 ? open.findIndex((call) => call.function.name === response.name) : at;
  if (fallback === -1)
    throw invalid(
      `functionResponse ${response.name} answers no functionCall of the model turn before it`,
      where,
    );
  const [call] = open.splice(fallback, 1);
  return { role: 'tool', tool_call_id: call!.id, content: responseText(response.response) };
}

/** A function's response as the model reads it: the text of `{output}` alone, else its JSON. */
function responseText(response: Record<string, unknown> | undefined): string {
  if (!response) return '';
  const keys = Object.keys(response);
  if (keys.length === 1 && typeof response.output === 'string') return response.output;
  return JSON.stringify(response);
}

function userPart(part: Part, where: string): UserPart | null {
  if (typeof part.text === 'string') return { type: 'text', text: part.text };
  if (part.inlineData) {
    const { mimeType, data } = part.inlineData;
    if (mimeType.startsWith('image/'))
      return { type: 'image_url', image_url: { url: `data:${mimeType};base64,${data}` } };
    if (mimeType.startsWith('audio/'))
      return { type: 'input_audio', input_audio: { data, format: mimeType.slice(6) } };
    return { type: 'file', file: { file_data: `data:${mimeType};base64,${data}` } };
  }
  if (part.fileData) {
    const uri = part.fileData.fileUri;
    if (part.fileData.mimeType?.startsWith('image/') && /^https?:\/\//i.test(uri))
      return { type: 'image_url', image_url: { url: uri } };
    throw invalid(
      'fileData parts (files stored with Google) cannot be read here: send the file inline as inlineData',
      `${where}.fileData`,
    );
  }
  return null;
}

function toParams(body: GenerateRequest, warnings: string[]): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  const tools = functionTools(body.tools, warnings);
  const config = body.toolConfig?.functionCallingConfig;
  const mode = config?.mode ?? 'AUTO';
  const allowed = config?.allowedFunctionNames;
  let offered = tools;
  if (mode === 'ANY' && allowed?.length) {
    offered = tools.filter((tool) => allowed.includes(tool.function.name));
    if (!offered.length)
      throw invalid(
        'allowedFunctionNames names no declared function',
        'toolConfig.functionCallingConfig.allowedFunctionNames',
      );
  }
  if (offered.length) {
    params.tools = offered;
    if (mode === 'NONE') params.tool_choice = 'none';
    else if (mode === 'ANY')
      params.tool_choice =
        offered.length === 1
          ? { type: 'function', function: { name: offered[0]!.function.name } }
          : 'required';
  }
  const generation = body.generationConfig;
  if (generation) {
    if (generation.temperature !== undefined) params.temperature = generation.temperature;
    if (generation.topP !== undefined) params.top_p = generation.topP;
    if (generation.topK !== undefined) note(warnings, 'generationConfig.topK is not forwarded');
    if (generation.stopSequences?.length) params.stop = generation.stopSequences.slice(0, 4);
    if ((generation.stopSequences?.length ?? 0) > 4)
      note(warnings, 'only the first 4 generationConfig.stopSequences are used');
    if (generation.candidateCount !== undefined && generation.candidateCount > 1)
      params.n = generation.candidateCount;
    if (generation.seed !== undefined) params.seed = generation.seed;
    if (generation.presencePenalty !== undefined)
      params.presence_penalty = generation.presencePenalty;
    if (generation.frequencyPenalty !== undefined)
      params.frequency_penalty = generation.frequencyPenalty;
    if (generation.responseLogprobs) {
      params.logprobs = true;
      if (generation.logprobs) params.top_logprobs = generation.logprobs;
    }
    const format = responseFormat(generation);
    if (format) params.response_format = format;
    const modalities = generation.responseModalities?.filter((m) => m.toUpperCase() !== 'TEXT');
    if (modalities?.length)
      throw invalid(
        `only TEXT responses are served, not ${modalities.join(', ')}`,
        'generationConfig.responseModalities',
      );
  }
  if (body.safetySettings?.length) note(warnings, 'safetySettings are not applied');
  if (body.cachedContent) note(warnings, 'cachedContent is not used');
  return params;
}

/** The function tools of every `functionDeclarations`; tools Google runs itself are dropped. */
function functionTools(tools: Tool[] | undefined, warnings: string[]) {
  const out: {
    type: 'function';
    function: { name: string; description?: string; parameters: Record<string, unknown> };
  }[] = [];
  (tools ?? []).forEach((tool, index) => {
    for (const key of Object.keys(tool))
      if (key !== 'functionDeclarations')
        note(warnings, `tool ${key} runs on Google's side and is not offered`);
    tool.functionDeclarations?.forEach((declaration, at) => {
      const param = `tools[${index}].functionDeclarations[${at}]`;
      const parameters =
        declaration.parametersJsonSchema !== undefined
          ? jsonSchemaObject(declaration.parametersJsonSchema, `${param}.parametersJsonSchema`)
          : declaration.parameters
            ? toJsonSchema(declaration.parameters, `${param}.parameters`)
            : { type: 'object', properties: {} };
      out.push({
        type: 'function',
        function: {
          name: declaration.name,
          ...(declaration.description ? { description: declaration.description } : {}),
          parameters,
        },
      });
    });
  });
  return out;
}

function jsonSchemaObject(value: unknown, param: string): Record<string, unknown> {
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw invalid('must be a JSON Schema object', param);
  return value as Record<string, unknown>;
}

function responseFormat(
  generation: NonNullable<GenerateRequest['generationConfig']>,
): Record<string, unknown> | null {
  const mime = generation.responseMimeType?.toLowerCase();
  if (!mime || mime === 'text/plain') return null;
  if (mime !== 'application/json')
    throw invalid(
      `responseMimeType ${generation.responseMimeType} is not served; use text/plain or application/json`,
      'generationConfig.responseMimeType',
    );
  const json_schema = generation.responseJsonSchema ?? generation._responseJsonSchema;
  const schema =
    json_schema !== undefined
      ? jsonSchemaObject(json_schema, 'generationConfig.responseJsonSchema')
      : generation.responseSchema
        ? toJsonSchema(generation.responseSchema, 'generationConfig.responseSchema')
        : null;
  if (!schema) return { type: 'json_object' };
  return { type: 'json_schema', json_schema: { name: 'response', schema } };
}

function note(warnings: string[], text: string): void {
  if (!warnings.includes(text)) warnings.push(text);
}
