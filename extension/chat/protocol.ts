// The one message protocol between the extension (extension/chat/) and the chat webview (media/).
// Both sides import these types; the extension validates everything that arrives from the webview.

export type ActionId =
  'setApiKey' | 'topUp' | 'startLocalGateway' | 'selectModel' | 'openSettings' | 'addModelProvider';

export const ACTION_LABELS: Record<ActionId, string> = {
  setApiKey: 'Set API Key',
  topUp: 'Top Up',
  startLocalGateway: 'Start Local Gateway',
  selectModel: 'Select Model',
  openSettings: 'Open Settings',
  addModelProvider: 'Add Model Provider',
};

export interface ReplyMeta {
  requestId: string;
  tier: string;
  cost: number;
  balance: number;
  currency: string;
  promptTokens: number;
  completionTokens: number;
  /** The model that answered has no known price (not in the catalogue, none given): it cost nothing here, not nothing at the provider. */
  unpriced?: true;
}

export type ChatEntry =
  /** `context`: labels of the files and selections that were sent with the message; `task`: an agent task. */
  | { id: string; role: 'user'; text: string; context?: string[]; task?: true }
  | {
      id: string;
      role: 'assistant';
      text: string;
      model: string;
      status: 'streaming' | 'done' | 'stopped' | 'error';
      meta?: ReplyMeta;
      error?: { message: string; actions: ActionId[] };
    }
  | AgentStepEntry
  | TaskResultEntry;

/** One tool call of an agent step, as the transcript shows it. */
export interface ToolCallView {
  /** The model's tool call id. */
  id: string;
  tool: string;
  /** One line: "Read src/a.ts (lines 1-40)". */
  title: string;
  /** The arguments as the model sent them (shortened). */
  args: string;
  status: 'running' | 'awaiting' | 'done' | 'failed' | 'refused' | 'rejected' | 'stopped';
  /** What the tool returned to the model (shortened for the view). */
  result?: string;
  /** An edit's unified diff. */
  diff?: string;
  /** Set while the call waits for the user's approval. */
  approval?: { id: string; kind: 'edit' | 'command' };
  /** What the call itself cost (a semantic search's embedding), in currency units. */
  cost?: number;
}

/** One step of an agent task: a model request (its text and cost) and the tool calls it asked for. */
export interface AgentStepEntry {
  id: string;
  role: 'agent';
  taskId: string;
  step: number;
  text: string;
  model: string;
  status: 'streaming' | 'done' | 'stopped' | 'error';
  calls: ToolCallView[];
  meta?: ReplyMeta;
  error?: { message: string; actions: ActionId[] };
}

export type TaskEndReason =
  'finished' | 'answered' | 'stopped' | 'steps' | 'cap' | 'time' | 'error';

/** The end of an agent task: its summary (or why it stopped), steps, total cost and what it changed. */
export interface TaskResultEntry {
  id: string;
  role: 'task';
  taskId: string;
  text: string;
  status: 'done' | 'stopped' | 'error';
  reason: TaskEndReason;
  steps: number;
  /** Total cost of the task's requests, in currency units. */
  cost: number;
  currency: string;
  changed: string[];
  created: string[];
  undone?: boolean;
  actions?: ActionId[];
}

/** The chat view's mode and the agent's availability. */
export interface ModeView {
  mode: 'chat' | 'agent';
  /** Why agent mode is unavailable (an untrusted or virtual workspace), when it is. */
  agentUnavailable?: string;
  /** Apply the task's edits without asking. */
  autoApproveEdits: boolean;
}

export interface ModelChoice {
  id: string;
  label: string;
}

/**
 * One piece of editor context the next message carries: the active editor's selection or file, an
 * added file, or a passage `@codebase` found.
 */
export interface ContextItemView {
  id: string;
  kind: 'active' | 'file' | 'codebase';
  label: string;
  /** e.g. "lines 3-9 selected", "whole file". */
  detail: string;
  tokens: number;
  /** Set when the content was cut to fit the budget. */
  note?: string;
}

export interface ContextView {
  includeActive: boolean;
  /** The active editor's item is listed even when excluded, so the toggle has something to show. */
  items: ContextItemView[];
  /** Estimated tokens of what will be sent (excluded items not counted). */
  tokens: number;
  budget: number;
}

export interface SpendView {
  currency: string;
  /** Spent since VS Code started, in currency units. */
  session: number;
  /** Spent today (UTC), in currency units. */
  today: number;
  /** The daily cap in currency units, when one is set. */
  cap: number | undefined;
  capReached: boolean;
}

export interface ConversationSummary {
  id: string;
  title: string;
  /** Milliseconds since the epoch. */
  updatedAt: number;
  messages: number;
}

/** Extension → webview. */
export type ToWebview =
  | {
      type: 'state';
      entries: ChatEntry[];
      models: ModelChoice[];
      model: string;
      /** Only the offline engine answers (the local gateway, no provider): the picker offers Add Model Provider. */
      offerProviders?: boolean;
      busy: boolean;
      conversation: { id: string; title: string };
    }
  | { type: 'entry'; entry: ChatEntry }
  | { type: 'delta'; id: string; text: string }
  | { type: 'models'; models: ModelChoice[]; model: string; offerProviders?: boolean }
  | { type: 'busy'; busy: boolean }
  | { type: 'focusInput' }
  | { type: 'conversation'; conversation: { id: string; title: string } }
  | { type: 'context'; context: ContextView }
  | { type: 'spend'; spend: SpendView }
  | { type: 'history'; conversations: ConversationSummary[]; currentId: string }
  /** Text for the input at the cursor (the path picked for an @ mention). */
  | { type: 'insertText'; text: string }
  | { type: 'mode'; mode: ModeView };

/** Webview → extension. */
export type FromWebview =
  | { type: 'ready' }
  /** `model`: the tier shown in the view's picker, which this message uses; `mode: 'agent'` starts a task. */
  | { type: 'send'; text: string; model?: string; mode?: 'agent' }
  | { type: 'stop' }
  | { type: 'newChat' }
  | { type: 'selectModel'; model: string }
  | { type: 'copy'; text: string }
  /** `language`: the code block's fence tag (`ts`, `python`...), for a new editor when none is open. */
  | { type: 'insert'; text: string; language?: string }
  | { type: 'action'; action: ActionId }
  | { type: 'openLink'; href: string }
  | { type: 'toggleActive'; include: boolean }
  | { type: 'addFile' }
  | { type: 'removeContext'; id: string }
  /** The user typed "@": pick a workspace file to mention. */
  | { type: 'mention' }
  | { type: 'showHistory' }
  | { type: 'openConversation'; id: string }
  | { type: 'renameConversation'; id: string }
  | { type: 'deleteConversation'; id: string }
  | { type: 'setMode'; mode: 'chat' | 'agent' }
  | { type: 'setAutoApprove'; value: boolean }
  /** An agent step's approval: `all` also applies the task's later edits without asking. */
  | { type: 'approve'; id: string; all?: boolean }
  | { type: 'reject'; id: string }
  /** Shows the diff of an agent edit (by its tool call id). */
  | { type: 'openDiff'; id: string }
  | { type: 'undoTask'; id: string };

export const MAX_MESSAGE_CHARS = 100_000;

const ACTION_IDS = new Set<string>(Object.keys(ACTION_LABELS));
/** Conversation and context item ids: never a path or a prototype key, only what the extension hands out. */
const ID = /^[\w:.-]{1,100}$/;
const MODEL = /^[\w.:-]{1,100}$/;

/** Validates a message from the webview; anything malformed or oversized is dropped (undefined). */
export function parseFromWebview(raw: unknown): FromWebview | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const message = raw as Record<string, unknown>;
  const text = (key: string): string | undefined => {
    const value = message[key];
    return typeof value === 'string' && value.length <= MAX_MESSAGE_CHARS ? value : undefined;
  };
  switch (message.type) {
    case 'ready':
    case 'stop':
    case 'newChat':
    case 'addFile':
    case 'mention':
    case 'showHistory':
      return { type: message.type };
    case 'toggleActive':
      return typeof message.include === 'boolean'
        ? { type: 'toggleActive', include: message.include }
        : undefined;
    case 'removeContext':
    case 'openConversation':
    case 'renameConversation':
    case 'deleteConversation': {
      const value = text('id');
      return value !== undefined && ID.test(value) ? { type: message.type, id: value } : undefined;
    }
    case 'send':
      return parseSend(message, text);
    case 'copy': {
      const value = text('text');
      return value !== undefined ? { type: 'copy', text: value } : undefined;
    }
    case 'insert': {
      const value = text('text');
      if (value === undefined) return undefined;
      const language = text('language');
      return language !== undefined && /^[\w#+.-]{1,40}$/.test(language)
        ? { type: 'insert', text: value, language }
        : { type: 'insert', text: value };
    }
    case 'selectModel': {
      const value = text('model');
      return value !== undefined && MODEL.test(value)
        ? { type: 'selectModel', model: value }
        : undefined;
    }
    case 'action': {
      const value = text('action');
      return value !== undefined && ACTION_IDS.has(value)
        ? { type: 'action', action: value as ActionId }
        : undefined;
    }
    case 'openLink': {
      const value = text('href');
      return value !== undefined && /^https?:\/\//i.test(value)
        ? { type: 'openLink', href: value }
        : undefined;
    }
    default:
      return parseAgentMessage(message, text);
  }
}

/** A message or (mode 'agent') a task, with the tier picked in the view. */
function parseSend(
  message: Record<string, unknown>,
  text: (key: string) => string | undefined,
): FromWebview | undefined {
  const value = text('text');
  if (value === undefined || value.trim() === '') return undefined;
  const model = text('model');
  return {
    type: 'send',
    text: value,
    ...(model !== undefined && MODEL.test(model) ? { model } : {}),
    ...(message.mode === 'agent' ? { mode: 'agent' as const } : {}),
  };
}

/** The agent's messages from the webview (mode, approvals, diffs, undo). */
function parseAgentMessage(
  message: Record<string, unknown>,
  text: (key: string) => string | undefined,
): FromWebview | undefined {
  switch (message.type) {
    case 'reject':
    case 'openDiff':
    case 'undoTask': {
      const value = text('id');
      return value !== undefined && ID.test(value) ? { type: message.type, id: value } : undefined;
    }
    case 'setMode':
      return message.mode === 'chat' || message.mode === 'agent'
        ? { type: 'setMode', mode: message.mode }
        : undefined;
    case 'setAutoApprove':
      return typeof message.value === 'boolean'
        ? { type: 'setAutoApprove', value: message.value }
        : undefined;
    case 'approve': {
      const value = text('id');
      if (value === undefined || !ID.test(value)) return undefined;
      return message.all === true
        ? { type: 'approve', id: value, all: true }
        : { type: 'approve', id: value };
    }
    default:
      return undefined;
  }
}

export function formatMoney(amount: number, currency: string): string {
  const symbol = currency === 'INR' ? '₹' : currency === 'USD' ? '$' : `${currency} `;
  const digits = Math.abs(amount) > 0 && Math.abs(amount) < 0.01 ? 6 : 2;
  return `${symbol}${amount.toFixed(digits)}`;
}
