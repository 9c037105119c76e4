// What the built-in engine decides for a request: a tool call (tool_choice required or named,
// or auto when the user's last message names the tool), a JSON answer (response_format), or
// prose; and, after tool results, prose that quotes them. Pure functions.
//
// Under a coding agent (Claude Code, Codex CLI, opencode offer dozens of tools with every
// request) a call the user did not ask for is an action taken on their machine with made-up
// arguments, so with tool_choice auto the engine calls a tool only when the user named it.
import type { ChatMessage } from '../messages.js';
import { instanceOf, type Json } from './builtin-schema.js';

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

interface FunctionTool {
  name: string;
  description: string;
  parameters: unknown;
}

const STOP_WORDS = new Set([
  'the',
  'and',
  'for',
  'with',
  'that',
  'this',
  'from',
  'into',
  'get',
  'set',
  'use',
  'tool',
  'function',
  'call',
  'value',
  'given',
  'returns',
  'return',
  'about',
  'your',
  'what',
  'which',
  'will',
]);
const DEFAULT_PARAMETERS = { type: 'object', properties: {} };

function functionTools(tools: unknown): FunctionTool[] {
  if (!Array.isArray(tools)) return [];
  const out: FunctionTool[] = [];
  for (const tool of tools) {
    const fn = (
      tool as {
        type?: unknown;
        function?: { name?: unknown; description?: unknown; parameters?: unknown };
      }
    )?.function;
    if ((tool as { type?: unknown }).type !== 'function' || !fn || typeof fn.name !== 'string')
      continue;
    out.push({
      name: fn.name,
      description: typeof fn.description === 'string' ? fn.description : '',
      parameters: fn.parameters ?? DEFAULT_PARAMETERS,
    });
  }
  return out;
}

/** Words of a name such as `get_weather` or `getWeather`, and of a description. */
function purposeWords(text: string): string[] {
  return (
    text
      .replace(/([a-z])([A-Z])/g, '$1 $2')
      .toLowerCase()
      .match(/[a-z][a-z0-9]{2,}/g) ?? []
  ).filter((w) => !STOP_WORDS.has(w));
}

function stem(word: string): string {
  return word.replace(/(ies|es|s|ing|ed)$/, '');
}

/** The tool whose purpose the prompt names best: a name word counts 2, a description word 1; at least 2 points. */
function purposeTool(tools: FunctionTool[], prompt: string): FunctionTool | null {
  const said = new Set(purposeWords(prompt).map(stem));
  let best: FunctionTool | null = null;
  let best_score = 1;
  for (const tool of tools) {
    const name_words = new Set(purposeWords(tool.name).map(stem));
    const description_words = new Set(purposeWords(tool.description).map(stem));
    let score = 0;
    for (const w of name_words) if (said.has(w)) score += 2;
    for (const w of description_words) if (said.has(w) && !name_words.has(w)) score += 1;
    if (score > best_score) {
      best = tool;
      best_score = score;
    }
  }
  return best;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Where the prompt names the tool, or -1. A name that is not a plain word (`get_weather`,
 * `TodoWrite`, `v2-search`) counts wherever it stands as a word, case and all; a plain word
 * (`Bash`, `Write`) only as a tool: in backticks, called (`Read(`), or beside "tool" or
 * "function" (`the Bash tool`, `function shell`), so "Write a poem" names no tool.
 */
function mentionAt(prompt: string, name: string): number {
  const word = `(?<![\\w-])${escape(name)}(?![\\w-])`;
  const pattern = /[_\-\d]|[a-z][A-Z]/.test(name)
    ? word
    : `\`${escape(name)}\`|${word}\\(|\\b[Tt]ool\\s+${word}|\\b[Ff]unction\\s+${word}|${word}\\s+(?:[Tt]ool|[Ff]unction)\\b`;
  return new RegExp(pattern).exec(prompt)?.index ?? -1;
}

/** The tool the prompt names (the first named, when it names several), or none. */
function namedTool(tools: FunctionTool[], prompt: string): FunctionTool | null {
  let best: FunctionTool | null = null;
  let best_at = Infinity;
  for (const tool of tools) {
    const at = mentionAt(prompt, tool.name);
    if (at >= 0 && at < best_at) {
      best = tool;
      best_at = at;
    }
  }
  return best;
}

export function textOf(content: ChatMessage['content'] | undefined): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
}

/**
 * What the user last said: the last user message's text, without the `<system-reminder>`
 * notes agents put in the same turn (Claude Code lists its tools and context there; they are
 * not the user's words).
 */
export function lastUserText(messages: readonly ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--)
    if (messages[i]!.role === 'user')
      return textOf(messages[i]!.content)
        .replace(/<system-reminder>[\s\S]*?<\/system-reminder>/g, '')
        .trim();
  return '';
}

/** The tool results that follow the last assistant message, with the calls they answer. */
export function trailingToolResults(
  messages: readonly ChatMessage[],
): Array<{ name: string; arguments: string; result: string }> {
  let i = messages.length;
  while (i > 0 && messages[i - 1]!.role === 'tool') i--;
  if (i === messages.length) return [];
  const assistant = messages[i - 1];
  const calls = assistant?.role === 'assistant' ? (assistant.tool_calls ?? []) : [];
  return messages.slice(i).map((message) => {
    const id = message.role === 'tool' ? message.tool_call_id : '';
    const call = calls.find((c) => c.id === id);
    return {
      name: call?.function.name ?? 'a tool',
      arguments: call?.function.arguments ?? '',
      result: textOf(message.content),
    };
  });
}

/** The tool calls the request asks for, or none. `salt` makes n choices differ. */
export function plannedToolCalls(
  params: Record<string, unknown>,
  messages: readonly ChatMessage[],
  seed: string,
): ToolCall[] {
  const tools = functionTools(params.tools);
  if (tools.length === 0) return [];
  const choice = params.tool_choice ?? 'auto';
  let tool: FunctionTool | null = null;
  if (choice === 'none') return [];
  if (typeof choice === 'object' && choice !== null) {
    const name = (choice as { function?: { name?: unknown } }).function?.name;
    tool = tools.find((t) => t.name === name) ?? null;
  } else if (choice === 'required') {
    const prompt = lastUserText(messages);
    tool = namedTool(tools, prompt) ?? purposeTool(tools, prompt) ?? tools[0]!;
  } else if (trailingToolResults(messages).length === 0) {
    tool = namedTool(tools, lastUserText(messages));
  }
  if (!tool) return [];
  const prompt = lastUserText(messages);
  const args: Json = instanceOf(tool.parameters, prompt, `${seed}\u0000${tool.name}`);
  const id = `call_${String(
    instanceOf(
      { type: 'string', format: 'uuid' },
      prompt,
      `${seed}\u0000id\u0000${messages.length}`,
    ),
  )
    .replace(/-/g, '')
    .slice(0, 24)}`;
  return [{ id, type: 'function', function: { name: tool.name, arguments: JSON.stringify(args) } }];
}

/**
 * For a request that offered tools and got none called (an agent's turn): why, and what to
 * do for a model that uses them. Empty without tools.
 */
export function uncalledToolsNote(params: Record<string, unknown>): string {
  const tools = functionTools(params.tools);
  if (tools.length === 0) return '';
  const example = tools.find((tool) => /^[A-Za-z][\w-]*$/.test(tool.name))?.name ?? tools[0]!.name;
  return [
    '',
    '',
    `This request offered ${tools.length} tool${tools.length === 1 ? '' : 's'}. The offline engine calls one only when \`tool_choice\` forces it or your message names it (for example "use the \`${example}\` tool"); it never acts on its own. For an agent that plans and uses its tools, point this tier at a real model: add an upstream under \`chat.engines\` in the gateway config and name it in \`chat.models.<tier>.targets\` (docs/chat-api.md, Upstreams).`,
  ].join('\n');
}

/** The JSON answer response_format asks for, or null for prose. */
export function plannedJson(
  params: Record<string, unknown>,
  messages: readonly ChatMessage[],
  seed: string,
  note: string,
): string | null {
  const format = params.response_format as
    { type?: unknown; json_schema?: { schema?: unknown } } | undefined;
  if (!format || typeof format !== 'object') return null;
  const prompt = lastUserText(messages);
  if (format.type === 'json_schema')
    return JSON.stringify(instanceOf(format.json_schema?.schema ?? {}, prompt, seed));
  if (format.type === 'json_object') {
    const results = trailingToolResults(messages);
    return JSON.stringify({
      answer: prompt.slice(0, 200),
      ...(results.length
        ? { tool_results: results.map((r) => ({ tool: r.name, result: r.result.slice(0, 500) })) }
        : {}),
      engine: note,
    });
  }
  return null;
}

/** Prose after tool results: what each tool returned, quoted. */
export function toolResultsAnswer(
  results: ReturnType<typeof trailingToolResults>,
  note: string,
): string {
  const lines = results.map(
    (r) => `- \`${r.name}(${r.arguments.slice(0, 200)})\` returned: ${r.result.slice(0, 500)}`,
  );
  return [
    `Here is what the tool${results.length === 1 ? '' : 's'} returned:`,
    ...lines,
    '',
    `${note}, so I report the results as they are rather than reason about them.`,
  ].join('\n');
}
