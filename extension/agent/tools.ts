// The agent's tools: their argument schemas (zod, the one source of the types, the validation of
// what the model sends and the JSON schema the model is given), and a one-line summary of a call
// for the transcript. Pure (unit-tested); the tools' effects live in executor.ts.
import { z } from 'zod';

/** Bounds of what a tool call may carry. */
export const MAX_PATH_CHARS = 1_000;
export const MAX_WRITE_CHARS = 1_000_000;
export const MAX_EDIT_BLOCKS = 20;

const path = z
  .string()
  .min(1)
  .max(MAX_PATH_CHARS)
  .describe('Path relative to the workspace folder, with / separators (e.g. src/app.ts).');

export const toolSchemas = {
  read_file: z
    .object({
      path,
      start_line: z
        .int()
        .min(1)
        .max(10_000_000)
        .optional()
        .describe('First line to read (1-based). Default 1.'),
      end_line: z
        .int()
        .min(1)
        .max(10_000_000)
        .optional()
        .describe(
          'Last line to read (inclusive). Default: as many lines as the read limit allows.',
        ),
    })
    .describe(
      'Read a text file of the workspace, or a range of its lines. Lines come numbered ("12| text"); the numbers are not part of the file.',
    ),
  list_folder: z
    .object({
      path: z
        .string()
        .max(MAX_PATH_CHARS)
        .optional()
        .describe(
          'Folder relative to the workspace folder; "" or "." for the workspace folder itself.',
        ),
    })
    .describe('List the files and folders (ending in /) of a workspace folder.'),
  search: z
    .object({
      query: z
        .string()
        .min(1)
        .max(500)
        .describe('Text (or regular expression) to find, or part of a file name.'),
      kind: z
        .enum(['text', 'files'])
        .optional()
        .describe(
          '"text" (default): lines of files containing the query; "files": files whose path contains the query.',
        ),
      regex: z
        .boolean()
        .optional()
        .describe('Treat the query as a regular expression (text search).'),
      include: z
        .string()
        .max(200)
        .optional()
        .describe('Only files matching this glob (e.g. "src/**/*.ts").'),
    })
    .describe(
      'Search the workspace the way VS Code searches it (files ignored by .gitignore, files.exclude and search.exclude are left out). When the codebase index is on, a text search also lists the semantically closest code chunks.',
    ),
  edit_file: z
    .object({
      path,
      edits: z
        .array(
          z.object({
            search: z
              .string()
              .min(1)
              .max(MAX_WRITE_CHARS)
              .describe('Lines copied exactly from the file (enough of them to match one place).'),
            replace: z.string().max(MAX_WRITE_CHARS).describe('What replaces them.'),
          }),
        )
        .min(1)
        .max(MAX_EDIT_BLOCKS),
    })
    .describe(
      'Change an existing file with search-and-replace blocks, applied in order. The user reviews the change as a diff before it is applied.',
    ),
  write_file: z
    .object({
      path,
      content: z.string().max(MAX_WRITE_CHARS).describe('The whole content of the file.'),
    })
    .describe(
      'Create a new file (folders are made as needed) or replace a whole file. The user reviews it as a diff before it is written. Prefer edit_file for changes to an existing file.',
    ),
  run_command: z
    .object({
      command: z
        .string()
        .min(1)
        .max(2_000)
        .describe('A shell command line, run in the workspace folder.'),
      timeout_seconds: z
        .int()
        .min(1)
        .max(3_600)
        .optional()
        .describe("Stop the command after this many seconds (at most the user's limit)."),
    })
    .describe(
      'Run a command in the workspace folder (the user approves it first unless it is on their allow-list). Its exit code and output (stdout and stderr, shortened when long) come back. Nothing is typed into it: interactive commands get no input.',
    ),
  finish: z
    .object({
      summary: z.string().min(1).max(20_000).describe('What was done, for the user (Markdown).'),
    })
    .describe('End the task with a summary of what was done (and what was not).'),
} as const;

export type ToolName = keyof typeof toolSchemas;
export type ToolArgs<N extends ToolName> = z.output<(typeof toolSchemas)[N]>;
export type ToolCallArgs = { [N in ToolName]: { name: N; args: ToolArgs<N> } }[ToolName];

export const TOOL_NAMES = Object.keys(toolSchemas) as ToolName[];

/** The tools in the chat completions `tools` shape. */
export function toolDefinitions(): Array<{
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}> {
  return TOOL_NAMES.map((name) => {
    const schema = toolSchemas[name];
    const {
      $schema: _drop,
      description,
      ...parameters
    } = z.toJSONSchema(schema, {
      io: 'input',
    }) as Record<string, unknown>;
    return {
      type: 'function' as const,
      function: { name, description: String(description ?? ''), parameters },
    };
  });
}

export type ParsedCall = { ok: true; call: ToolCallArgs } | { ok: false; error: string };

/** Validates a tool call from the model: a known tool and arguments that fit its schema. */
export function parseToolCall(name: string, rawArguments: string): ParsedCall {
  if (!Object.hasOwn(toolSchemas, name))
    return {
      ok: false,
      error: `there is no tool "${name}"; the tools are ${TOOL_NAMES.join(', ')}`,
    };
  let json: unknown;
  try {
    json = rawArguments.trim() === '' ? {} : JSON.parse(rawArguments);
  } catch {
    return { ok: false, error: 'the arguments are not valid JSON (was the answer cut off?)' };
  }
  const parsed = toolSchemas[name as ToolName].safeParse(json);
  if (!parsed.success)
    return {
      ok: false,
      error: `invalid arguments: ${parsed.error.issues
        .slice(0, 5)
        .map((i) => `${i.path.join('.') || '(arguments)'}: ${i.message}`)
        .join('; ')}`,
    };
  return { ok: true, call: { name, args: parsed.data } as ToolCallArgs };
}

/** One line for the transcript: what the call does. */
export function describeCall(call: ToolCallArgs): string {
  switch (call.name) {
    case 'read_file': {
      const { start_line: from, end_line: to } = call.args;
      const range = from || to ? ` (lines ${from ?? 1}-${to ?? 'end'})` : '';
      return `Read ${call.args.path}${range}`;
    }
    case 'list_folder':
      return `List ${call.args.path?.trim() || 'the workspace folder'}`;
    case 'search':
      return `Search ${call.args.kind === 'files' ? 'file names' : 'text'} for "${call.args.query}"${call.args.include ? ` in ${call.args.include}` : ''}`;
    case 'edit_file':
      return `Edit ${call.args.path} (${call.args.edits.length} block${call.args.edits.length === 1 ? '' : 's'})`;
    case 'write_file':
      return `Write ${call.args.path}`;
    case 'run_command':
      return `Run \`${call.args.command}\``;
    case 'finish':
      return 'Finish';
  }
}
