// Anthropic's tools as chat functions. Custom tools pass as they are. Anthropic-defined
// tools that the CLIENT executes (bash, the text editor, memory) have a fixed input the
// model is trained on; they become plain functions of that input under their own name, so
// the model's tool_use comes back as the client expects it. Tools Anthropic's servers run
// (web search, web fetch, code execution, tool search, MCP connectors) and the computer-use
// tool (its screenshots cannot reach a chat model through tool results) are dropped, each
// with a warning: the request is served without them.
import { invalid } from '../parse.js';
import { quoted } from '../tool-names.js';
import type { MessagesRequest } from './schemas.js';

type Tool = NonNullable<MessagesRequest['tools']>[number];

export interface ChatFunction {
  type: 'function';
  function: { name: string; description?: string; parameters: Record<string, unknown> };
}

const str = (description: string) => ({ type: 'string', description });

const BASH = {
  description:
    'Run a command in a persistent bash shell. State (working directory, variables) persists between calls; set `restart` to start a new shell.',
  parameters: {
    type: 'object',
    properties: {
      command: str('The bash command to run. Required unless restarting.'),
      restart: { type: 'boolean', description: 'Restart the shell instead of running a command.' },
    },
  },
};

function textEditor(with_undo: boolean) {
  const commands = ['view', 'create', 'str_replace', 'insert', ...(with_undo ? ['undo_edit'] : [])];
  return {
    description:
      'View, create and edit text files: `view` a file (with line numbers) or a directory, `create` a file with `file_text`, `str_replace` exactly one occurrence of `old_str` by `new_str`, `insert` `new_str` after line `insert_line` (0: at the top)' +
      (with_undo ? ', `undo_edit` the last edit of a file.' : '.'),
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string', enum: commands, description: 'The command to run.' },
        path: str('Absolute path of the file or directory.'),
        file_text: str('`create`: the content of the new file.'),
        old_str: str('`str_replace`: the exact text to replace.'),
        new_str: str('`str_replace`: the new text; `insert`: the text to insert.'),
        insert_line: { type: 'integer', description: '`insert`: the line to insert after.' },
        view_range: {
          type: 'array',
          items: { type: 'integer' },
          description: '`view`: [first, last] line (last -1: to the end).',
        },
      },
      required: ['command', 'path'],
    },
  };
}

const MEMORY = {
  description:
    'Read and write files in the /memories directory, kept across conversations: `view` a file or the directory, `create` a file, `str_replace` text, `insert` `insert_text` after `insert_line`, `delete` a file, `rename` `old_path` to `new_path`.',
  parameters: {
    type: 'object',
    properties: {
      command: {
        type: 'string',
        enum: ['view', 'create', 'str_replace', 'insert', 'delete', 'rename'],
      },
      path: str('A path under /memories.'),
      view_range: { type: 'array', items: { type: 'integer' } },
      file_text: str('`create`: the content of the file.'),
      old_str: str('`str_replace`: the exact text to replace.'),
      new_str: str('`str_replace`: the new text.'),
      insert_line: { type: 'integer' },
      insert_text: str('`insert`: the text to insert.'),
      old_path: str('`rename`: the current path.'),
      new_path: str('`rename`: the new path.'),
    },
    required: ['command'],
  },
};

/** Anthropic-defined client tools by type prefix: their input as a chat function's. */
const CLIENT_TOOLS: [RegExp, { description: string; parameters: Record<string, unknown> }][] = [
  [/^bash_\d{8}$/, BASH],
  [/^text_editor_(20241022|20250124)$/, textEditor(true)],
  [/^text_editor_\d{8}$/, textEditor(false)],
  [/^memory_\d{8}$/, MEMORY],
];

/** Tools Anthropic runs on its servers, or that need what a chat model cannot get (screenshots). */
function droppedWhy(type: string): string {
  if (/^computer_\d{8}$/.test(type))
    return 'computer use needs screenshots in tool results, which a chat model behind this gateway cannot read';
  return "a server tool Anthropic's API runs; this gateway does not run it";
}

/** The request's tools as chat functions, and a warning for each tool dropped. */
export function chatTools(tools: readonly Tool[]): {
  functions: ChatFunction[];
  dropped: string[];
  warnings: string[];
} {
  const functions: ChatFunction[] = [];
  const dropped: string[] = [];
  const warnings: string[] = [];
  tools.forEach((tool, index) => {
    const type = tool.type ?? 'custom';
    if (type === 'custom') {
      const { name, description, input_schema } = tool as {
        name?: string;
        description?: string;
        input_schema?: Record<string, unknown>;
      };
      if (!name || !input_schema)
        throw invalid(`tools.${index}.${name ? 'input_schema' : 'name'}: Field required`);
      functions.push({
        type: 'function',
        function: { name, ...(description ? { description } : {}), parameters: input_schema },
      });
      return;
    }
    const client = CLIENT_TOOLS.find(([pattern]) => pattern.test(type));
    if (client && typeof tool.name === 'string') {
      functions.push({ type: 'function', function: { name: tool.name, ...client[1] } });
      return;
    }
    if (typeof tool.name === 'string') dropped.push(tool.name);
    warnings.push(`tools[${index}] (type ${quoted(type)}) dropped: ${droppedWhy(type)}`);
  });
  return { functions, dropped, warnings };
}
