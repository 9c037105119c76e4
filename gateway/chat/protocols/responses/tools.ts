// Responses tools as chat functions. Function tools pass as they are. A `namespace` tool (Codex
// CLI groups its multi-agent tools, and MCP servers' tools, that way) is flattened: each of
// its functions becomes the chat function `<namespace>__<name>`, and a call of it comes back
// as a function_call item with `name` and `namespace` apart, which is how Codex routes a
// call to a namespaced tool (a call without the namespace is "unsupported"). Hosted tools
// the gateway cannot run (web_search, file_search, code_interpreter, computer use, image
// generation, local_shell, mcp, ...) are dropped, each with a warning: the request is served
// without them.
import { invalid } from '../parse.js';
import { flatName, quoted } from '../tool-names.js';
import { functionToolSchema, type ResponsesRequest } from './schemas.js';

type Tool = NonNullable<ResponsesRequest['tools']>[number];

export interface ChatFunction {
  type: 'function';
  function: {
    name: string;
    description?: string;
    parameters?: Record<string, unknown>;
    strict?: boolean;
  };
}

/** A function as the client knows it: its name, and its namespace when it has one. */
export interface ClientName {
  name: string;
  namespace?: string;
}

/** Chat function names of namespaced functions → the names the client knows them by. */
export type ToolNames = ReadonlyMap<string, ClientName>;

/** How the client calls back a chat function (a namespaced one by name and namespace). */
export function clientName(names: ToolNames, chat_name: string): ClientName {
  return names.get(chat_name) ?? { name: chat_name };
}

function chatFunction(tool: Tool, name: string): ChatFunction | null {
  const parsed = functionToolSchema.safeParse(tool);
  if (!parsed.success) return null;
  const t = parsed.data;
  return {
    type: 'function',
    function: {
      name,
      ...(t.description ? { description: t.description } : {}),
      ...(t.parameters ? { parameters: t.parameters } : {}),
      ...(t.strict != null ? { strict: t.strict } : {}),
    },
  };
}

const HOSTED =
  'a hosted tool the Responses API runs on its servers (or a client tool type chat models do not know); this gateway does not run it';

/** The request's tools as chat functions, the names to map calls back by, and a warning per tool dropped. */
export function chatTools(tools: readonly Tool[]): {
  functions: ChatFunction[];
  names: Map<string, ClientName>;
  warnings: string[];
} {
  const functions: ChatFunction[] = [];
  const names = new Map<string, ClientName>();
  const warnings: string[] = [];
  const drop = (where: string, type: unknown) =>
    warnings.push(`${where} (type ${quoted(type)}) dropped: ${HOSTED}`);
  tools.forEach((tool, index) => {
    if (tool.type === 'function') {
      const fn = chatFunction(tool, String(tool.name));
      if (!fn)
        throw invalid(
          `tools[${index}]: a function tool needs a name (and parameters as an object)`,
          `tools[${index}]`,
        );
      functions.push(fn);
      return;
    }
    if (tool.type !== 'namespace' || typeof tool.name !== 'string' || !Array.isArray(tool.tools)) {
      drop(`tools[${index}]`, tool.type);
      return;
    }
    const namespace = tool.name;
    (tool.tools as Tool[]).forEach((inner, j) => {
      const name = (inner as { name?: unknown } | null)?.name;
      const fn =
        inner?.type === 'function' && typeof name === 'string'
          ? chatFunction(inner, flatName(namespace, name))
          : null;
      if (!fn) {
        drop(`tools[${index}].tools[${j}]`, inner?.type);
        return;
      }
      names.set(fn.function.name, { name: name as string, namespace });
      functions.push(fn);
    });
  });
  return { functions, names, warnings };
}
