// The Responses API to chat completions and back: input items become chat messages
// (function_call → an assistant tool call, function_call_output → a tool message), tools
// (tools.ts: namespaces flattened, hosted tools dropped) and tool_choice their chat forms,
// text.format a response_format; the chat answer becomes output items (reasoning, message,
// function_call, a namespaced one with its namespace) with Responses usage.
import type { ChatMessage } from '../../../llm/messages.js';
import type { UpstreamCompletion } from '../../../llm/types.js';
import { invalid, parseBody } from '../parse.js';
import {
  reasoningOf,
  toolCallsOf,
  type AnswerMeta,
  type ChatCall,
  type Protocol,
  type Usage,
} from '../../protocol.js';
import { flatName } from '../tool-names.js';
import { chatTools, clientName, type ToolNames } from './tools.js';
import {
  contentPartSchema,
  responsesRequestSchema,
  type InputItem,
  type ResponsesRequest,
} from './schemas.js';
import { ResponsesStream } from './stream.js';
import { incompleteDetails, responseEnvelope, responsesUsage } from './present.js';
import type { z } from 'zod';
import { responsesNative } from './native.js';

export const responsesProtocol: Protocol = {
  name: 'responses',
  parse(raw) {
    const body = parseBody(responsesRequestSchema, raw);
    if (body.previous_response_id) {
      throw invalid(
        'previous_response_id is not supported: this gateway keeps no responses (store is ignored); send the whole conversation in `input`',
        'previous_response_id',
      );
    }
    const { params, names, warnings } = toParams(body);
    const call: ChatCall = {
      protocol: 'responses',
      model: body.model,
      messages: toMessages(body),
      params,
      stream: body.stream === true,
      choices: 1,
      requested_max: body.max_output_tokens ?? null,
      cap_field: 'max_output_tokens',
      original: raw as Record<string, unknown>,
      warnings,
      json: (completion, usage, meta) => responseJson(body, names, completion, usage, meta),
      bill_in_body: true,
      native: responsesNative,
      streamer: (meta) => new ResponsesStream(body, meta, names),
    };
    return call;
  },
};

type Part = z.output<typeof contentPartSchema>;

function toMessages(body: ResponsesRequest): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (body.instructions) messages.push({ role: 'system', content: body.instructions });
  if (typeof body.input === 'string') {
    messages.push({ role: 'user', content: body.input });
    return messages;
  }
  body.input.forEach((item, index) => addItem(messages, item, index));
  if (!messages.some((message) => message.role !== 'system' && message.role !== 'developer')) {
    throw invalid('input must contain at least one user, assistant or tool item', 'input');
  }
  return messages;
}

function addItem(messages: ChatMessage[], item: InputItem, index: number): void {
  if (item.type === 'reasoning') return;
  if (item.type === 'function_call') {
    // A namespaced function's call, as the chat function the tools were flattened into.
    const namespace = (item as { namespace?: unknown }).namespace;
    const name =
      typeof namespace === 'string' && namespace ? flatName(namespace, item.name) : item.name;
    const call = {
      id: item.call_id,
      type: 'function' as const,
      function: { name, arguments: item.arguments },
    };
    const last = messages.at(-1);
    // Parallel calls are consecutive items; chat carries them on one assistant message.
    if (last && last.role === 'assistant' && last.tool_calls && !last.content)
      last.tool_calls.push(call);
    else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    return;
  }
  if (item.type === 'function_call_output') {
    const content =
      typeof item.output === 'string'
        ? item.output
        : item.output.map((part) => partText(part)).join('');
    messages.push({ role: 'tool', tool_call_id: item.call_id, content });
    return;
  }
  const param = `input[${index}].content`;
  if (item.role === 'assistant') {
    const content =
      typeof item.content === 'string'
        ? item.content
        : item.content.map((part) => partText(part)).join('');
    messages.push({ role: 'assistant', content });
    return;
  }
  if (item.role === 'system' || item.role === 'developer') {
    const content =
      typeof item.content === 'string'
        ? item.content
        : item.content.map((part) => partText(part)).join('');
    messages.push({ role: item.role, content });
    return;
  }
  if (typeof item.content === 'string') {
    messages.push({ role: 'user', content: item.content });
    return;
  }
  if (item.content.length === 0)
    throw invalid('a user message needs at least one content part', param);
  messages.push({ role: 'user', content: item.content.map((part) => userPart(part, param)) });
}

function partText(part: Part): string {
  if (part.type === 'input_text' || part.type === 'output_text') return part.text;
  if (part.type === 'refusal') return part.refusal;
  return '';
}

type UserPart = Exclude<Extract<ChatMessage, { role: 'user' }>['content'], string>[number];

function userPart(part: Part, param: string): UserPart {
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: part.text };
    case 'refusal':
      return { type: 'text', text: part.refusal };
    case 'input_image':
      if (!part.image_url)
        throw invalid(
          'input_image needs an image_url (a URL or a data: URL); file_id is not supported here',
          param,
        );
      return {
        type: 'image_url',
        image_url: { url: part.image_url, ...(part.detail ? { detail: part.detail } : {}) },
      };
    case 'input_file':
      return {
        type: 'file',
        file: {
          ...(part.file_data ? { file_data: part.file_data } : {}),
          ...(part.file_id ? { file_id: part.file_id } : {}),
          ...(part.filename ? { filename: part.filename } : {}),
        },
      };
  }
}

function toParams(body: ResponsesRequest) {
  const params: Record<string, unknown> = {};
  const tools = chatTools(body.tools ?? []);
  if (tools.functions.length) params.tools = tools.functions;
  if (body.tool_choice !== undefined) {
    params.tool_choice =
      typeof body.tool_choice === 'string'
        ? body.tool_choice
        : { type: 'function', function: { name: body.tool_choice.name } };
    // Forcing a tool with none left to call would be refused upstream: no tools, no choice.
    if (!params.tools) delete params.tool_choice;
  }
  if (body.parallel_tool_calls != null && params.tools)
    params.parallel_tool_calls = body.parallel_tool_calls;
  const format = body.text?.format;
  if (format?.type === 'json_object') params.response_format = { type: 'json_object' };
  if (format?.type === 'json_schema') {
    params.response_format = {
      type: 'json_schema',
      json_schema: {
        name: format.name,
        schema: format.schema,
        ...(format.description ? { description: format.description } : {}),
        ...(format.strict != null ? { strict: format.strict } : {}),
      },
    };
  }
  if (body.temperature != null) params.temperature = body.temperature;
  if (body.top_p != null) params.top_p = body.top_p;
  if (body.user) params.user = body.user;
  return { params, names: tools.names, warnings: tools.warnings };
}

function responseJson(
  body: ResponsesRequest,
  names: ToolNames,
  completion: UpstreamCompletion,
  usage: Usage,
  meta: AnswerMeta,
): Record<string, unknown> {
  const choice = completion.choices[0]!;
  const message = choice.message;
  const output: Record<string, unknown>[] = [];
  const reasoning = reasoningOf(message);
  if (reasoning)
    output.push({
      type: 'reasoning',
      id: `rs_${meta.request_id}`,
      summary: [],
      content: [{ type: 'reasoning_text', text: reasoning }],
    });
  const refusal = (message as { refusal?: unknown }).refusal;
  if (message.content || typeof refusal === 'string') {
    output.push({
      type: 'message',
      id: `msg_${meta.request_id}`,
      status: 'completed',
      role: 'assistant',
      content: [
        typeof refusal === 'string' && refusal
          ? { type: 'refusal', refusal }
          : { type: 'output_text', text: message.content ?? '', annotations: [], logprobs: [] },
      ],
    });
  }
  toolCallsOf(message).forEach((call, index) => {
    output.push({
      type: 'function_call',
      id: `fc_${meta.request_id}_${index}`,
      call_id: call.id ?? `call_${meta.request_id}_${index}`,
      ...clientName(names, call.function?.name ?? ''),
      arguments: call.function?.arguments ?? '',
      status: 'completed',
    });
  });
  const incomplete = incompleteDetails(choice.finish_reason);
  // The item the output limit cut (the last one) is incomplete, as the Response is.
  const last = output.at(-1);
  if (incomplete && last && 'status' in last) last.status = 'incomplete';
  return {
    ...responseEnvelope(body, meta),
    status: incomplete ? 'incomplete' : 'completed',
    incomplete_details: incomplete,
    output,
    usage: responsesUsage(usage, completion.usage),
  };
}
