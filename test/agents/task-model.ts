// A scripted model that does one task the way a model in a coding agent would: asked to write
// a file, it calls the agent's own file-writing tool, found among the `tools` the request
// carries by its schema (a path and a content property: Claude Code's Write, opencode's
// write), else the agent's shell tool (a command property: Codex's exec_command) with a
// command that writes the file; once the tool's result is in the conversation, it answers
// with a short text. Requests without the task (titles, summaries) get a short text. Its
// arguments are checked against the tool's own schema before they are sent.
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { PlainBehavior } from '../support/scripted-upstream.js';

export interface FileTask {
  /** Absolute path of the file to write. */
  path: string;
  content: string;
  /** A word of the prompt that marks the request that carries the task (the file's name). */
  marker: string;
}

export interface TaskLog {
  /** The tool call the model made, once it made it. */
  call: { name: string; arguments: Record<string, unknown> } | null;
  /** The tool result that came back for it. */
  result: string | null;
  /** Why the model could not do the task (no usable tool), if so. */
  problem: string | null;
}

interface ChatTool {
  type?: string;
  function?: { name?: string; parameters?: JsonSchema; description?: string };
}
interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
}

const CALL_ID = 'call_write_file_1';

/** The model's last answer, once the file is written. */
export const DONE = (marker: string) => `Done: ${marker} is written.`;

export function fileTaskModel(task: FileTask, log: TaskLog): (body: any) => PlainBehavior {
  return (body) => {
    const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
    const tools: ChatTool[] = Array.isArray(body?.tools) ? body.tools : [];
    const result = messages.find((m) => m?.role === 'tool' && m.tool_call_id === CALL_ID);
    if (result) {
      log.result = textOf(result.content);
      return { kind: 'ok', content: DONE(task.marker) };
    }
    const asked = messages.some(
      (m) => m?.role === 'user' && textOf(m.content).includes(task.marker),
    );
    if (!asked || tools.length === 0) return { kind: 'ok', content: 'OK.' };
    const call = writeCall(tools, task);
    if ('problem' in call) {
      log.problem = call.problem;
      return { kind: 'ok', content: `I cannot write files here: ${call.problem}` };
    }
    log.call = call;
    return {
      kind: 'ok',
      tool_calls: [{ id: CALL_ID, name: call.name, arguments: JSON.stringify(call.arguments) }],
    };
  };
}

/** The call that writes the file with one of these tools, valid against the tool's schema. */
export function writeCall(
  tools: ChatTool[],
  task: Pick<FileTask, 'path' | 'content'>,
): { name: string; arguments: Record<string, unknown> } | { problem: string } {
  const candidates = tools
    .map((tool) => ({ name: tool.function?.name ?? '', schema: tool.function?.parameters ?? {} }))
    .filter((tool) => tool.name);
  const writers = candidates
    .map((tool) => ({ ...tool, args: writeArguments(tool.schema, task) }))
    .filter((tool) => tool.args !== null)
    .sort((a, b) => Number(/write/i.test(b.name)) - Number(/write/i.test(a.name)));
  const shells = candidates
    .map((tool) => ({ ...tool, args: shellArguments(tool.schema, task) }))
    .filter((tool) => tool.args !== null);
  const chosen = writers[0] ?? shells[0];
  if (!chosen)
    return {
      problem: `no tool takes a path and a content, or a shell command (tools: ${candidates.map((t) => t.name).join(', ')})`,
    };
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const { $schema: _ignored, ...schema } = chosen.schema as Record<string, unknown>;
  const valid = ajv.validate(schema, chosen.args);
  if (!valid)
    return {
      problem: `${chosen.name}'s schema refuses ${JSON.stringify(chosen.args)}: ${ajv.errorsText()}`,
    };
  return { name: chosen.name, arguments: chosen.args! };
}

const PATH_KEYS = /^(file_?path|path|file_?name|target_?file)$/i;
const CONTENT_KEYS = /^(content|contents|text|file_?text)$/i;
const COMMAND_KEYS = /^(cmd|command)$/i;

function writeArguments(schema: JsonSchema, task: Pick<FileTask, 'path' | 'content'>) {
  const properties = schema.properties ?? {};
  const names = Object.keys(properties);
  const path = names.find((name) => PATH_KEYS.test(name) && isType(properties[name], 'string'));
  const content = names.find(
    (name) => CONTENT_KEYS.test(name) && isType(properties[name], 'string'),
  );
  if (!path || !content) return null;
  if ((schema.required ?? []).some((name) => name !== path && name !== content)) return null;
  return { [path]: task.path, [content]: task.content };
}

function shellArguments(schema: JsonSchema, task: Pick<FileTask, 'path' | 'content'>) {
  const properties = schema.properties ?? {};
  const key = Object.keys(properties).find((name) => COMMAND_KEYS.test(name));
  if (!key) return null;
  if ((schema.required ?? []).some((name) => name !== key)) return null;
  const command = `printf '%s' ${quote(task.content)} > ${quote(task.path)}`;
  if (isType(properties[key], 'string')) return { [key]: command };
  if (isType(properties[key], 'array')) return { [key]: ['bash', '-lc', command] };
  return null;
}

function isType(schema: JsonSchema | undefined, type: string): boolean {
  const declared = schema?.type;
  return Array.isArray(declared) ? declared.includes(type) : declared === type;
}

/** A POSIX shell single-quoted word. */
function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('');
  return '';
}
