// The chat webview's script: mirrors the transcript the extension sends, renders replies as
// Markdown (as DOM nodes, never as HTML strings), and posts the user's intents back.
import {
  ACTION_LABELS,
  formatMoney,
  type ActionId,
  type AgentStepEntry,
  type ChatEntry,
  type ModeView,
  type TaskResultEntry,
  type ToolCallView,
  type ContextView,
  type ConversationSummary,
  type FromWebview,
  type ModelChoice,
  type SpendView,
  type ToWebview,
} from '../extension/chat/protocol.js';
import { renderMarkdown, type CodeBlock } from './markdown.js';

declare function acquireVsCodeApi(): {
  postMessage(message: FromWebview): void;
  getState(): unknown;
  setState(state: unknown): void;
};

const vscode = acquireVsCodeApi();
const transcript = byId<HTMLElement>('transcript');
const input = byId<HTMLTextAreaElement>('input');
const composer = byId<HTMLFormElement>('composer');
const send = byId<HTMLButtonElement>('send');
const stop = byId<HTMLButtonElement>('stop');
const modelSelect = byId<HTMLSelectElement>('model');
const modeSelect = byId<HTMLSelectElement>('mode');
const autoApprove = byId<HTMLInputElement>('auto-approve');
const autoApproveLabel = byId<HTMLLabelElement>('auto-approve-label');
const newChat = byId<HTMLButtonElement>('new-chat');
const historyButton = byId<HTMLButtonElement>('history-button');
const historyPanel = byId<HTMLElement>('history');
const contextBar = byId<HTMLElement>('context');
const spendLine = byId<HTMLElement>('spend');
const titleLine = byId<HTMLElement>('conversation-title');
/** The code blocks of each rendered reply, for its Copy and Insert buttons. */
const codeBlocksOf = new WeakMap<Element, CodeBlock[]>();

const entries = new Map<string, { entry: ChatEntry; element: HTMLElement }>();
let busy = false;
let renderQueued = new Set<string>();
let frame = 0;

function byId<T extends HTMLElement>(id: string): T {
  return document.getElementById(id) as T;
}

function post(message: FromWebview): void {
  vscode.postMessage(message);
}

window.addEventListener('message', (event: MessageEvent<ToWebview>) => {
  const message = event.data;
  switch (message.type) {
    case 'state':
      entries.clear();
      transcript.replaceChildren();
      message.entries.forEach(upsert);
      setModels(message.models, message.model, message.offerProviders);
      setBusy(message.busy);
      showTitle(message.conversation.title);
      scrollToEnd();
      return;
    case 'conversation':
      showTitle(message.conversation.title);
      return;
    case 'entry':
      upsert(message.entry);
      scrollToEnd();
      return;
    case 'delta': {
      const known = entries.get(message.id);
      if (!known) return;
      known.entry.text += message.text;
      queueRender(message.id);
      return;
    }
    case 'models':
      setModels(message.models, message.model, message.offerProviders);
      return;
    case 'busy':
      setBusy(message.busy);
      return;
    case 'focusInput':
      input.focus();
      return;
    case 'context':
      renderContext(message.context);
      return;
    case 'spend':
      renderSpend(message.spend);
      return;
    case 'history':
      renderHistory(message.conversations, message.currentId);
      return;
    case 'insertText':
      insertIntoInput(message.text);
      return;
    case 'mode':
      showMode(message.mode);
      return;
  }
});

composer.addEventListener('submit', (event) => {
  event.preventDefault();
  submit();
});
input.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    submit();
  }
});
input.addEventListener('input', (event) => {
  vscode.setState({ draft: input.value });
  // "@" typed at the start of a word: pick a workspace file to mention.
  const typed = (event as InputEvent).data;
  const before = input.value.slice(0, input.selectionStart ?? 0);
  if (typed === '@' && /(^|\s)@$/.test(before)) post({ type: 'mention' });
});
historyButton.addEventListener('click', () => {
  const show = historyPanel.hidden;
  historyPanel.hidden = !show;
  historyButton.setAttribute('aria-expanded', String(show));
  if (show) post({ type: 'showHistory' });
});
transcript.addEventListener('click', (event) => {
  const target = event.target as HTMLElement;
  // An agent step's buttons: approve, reject, open the diff; a task's Undo.
  const agentButton = target.closest<HTMLElement>('[data-agent-action]');
  if (agentButton) {
    const id = agentButton.dataset.id ?? '';
    switch (agentButton.dataset.agentAction) {
      case 'approve':
        post({ type: 'approve', id });
        break;
      case 'approve-all':
        post({ type: 'approve', id, all: true });
        break;
      case 'reject':
        post({ type: 'reject', id });
        break;
      case 'open-diff':
        post({ type: 'openDiff', id });
        break;
      case 'undo-task':
        post({ type: 'undoTask', id });
        break;
    }
    return;
  }
  const action = target.closest<HTMLElement>('[data-code-action]');
  if (action) {
    const block = action.closest<HTMLElement>('.code-block');
    const markdown = action.closest('.markdown');
    const code = markdown
      ? codeBlocksOf.get(markdown)?.[Number(block?.dataset.codeIndex)]
      : undefined;
    if (!code) return;
    if (action.dataset.codeAction === 'copy') post({ type: 'copy', text: code.code });
    else
      post({
        type: 'insert',
        text: code.code,
        ...(code.lang && /^[\w#+.-]{1,40}$/.test(code.lang) ? { language: code.lang } : {}),
      });
    return;
  }
  const link = target.closest<HTMLAnchorElement>('.markdown a[href]');
  if (link) {
    event.preventDefault();
    if (/^https?:\/\//i.test(link.href)) post({ type: 'openLink', href: link.href });
  }
});
document.addEventListener('keydown', (event) => {
  if (event.key === 'Escape' && busy) {
    event.preventDefault();
    post({ type: 'stop' });
  }
});
stop.addEventListener('click', () => post({ type: 'stop' }));
newChat.addEventListener('click', () => post({ type: 'newChat' }));
modelSelect.addEventListener('change', () => {
  if (modelSelect.value === ADD_PROVIDER) {
    modelSelect.value = shownModel;
    post({ type: 'action', action: 'addModelProvider' });
    return;
  }
  shownModel = modelSelect.value;
  post({ type: 'selectModel', model: modelSelect.value });
});
modeSelect.addEventListener('change', () => {
  const mode = modeSelect.value === 'agent' ? 'agent' : 'chat';
  post({ type: 'setMode', mode });
  applyMode(mode);
});
autoApprove.addEventListener('change', () =>
  post({ type: 'setAutoApprove', value: autoApprove.checked }),
);

function submit(): void {
  const text = input.value.trim();
  if (!text || busy) return;
  post({
    type: 'send',
    text,
    ...(modelSelect.value ? { model: modelSelect.value } : {}),
    ...(modeSelect.value === 'agent' ? { mode: 'agent' as const } : {}),
  });
  input.value = '';
  vscode.setState({ draft: '' });
}

function setBusy(value: boolean): void {
  busy = value;
  stop.hidden = !value;
  send.disabled = value;
  document.body.classList.toggle('busy', value);
}

/** The picker's last entry while only the offline engine answers: not a model, it runs Add Model Provider. */
const ADD_PROVIDER = 'aihub:add-model-provider';
let shownModel = '';

function setModels(models: ModelChoice[], selected: string, offerProviders = false): void {
  shownModel = selected;
  modelSelect.replaceChildren(
    ...models.map((model) => {
      const option = document.createElement('option');
      option.value = model.id;
      option.textContent = model.label;
      option.selected = model.id === selected;
      return option;
    }),
  );
  if (!models.some((m) => m.id === selected)) {
    const option = document.createElement('option');
    option.value = selected;
    option.textContent = selected;
    option.selected = true;
    modelSelect.append(option);
  }
  if (offerProviders) {
    const option = document.createElement('option');
    option.value = ADD_PROVIDER;
    option.textContent = 'Add Model Provider… (real models: OpenAI, Anthropic, Ollama…)';
    modelSelect.append(option);
  }
}

function upsert(entry: ChatEntry): void {
  const known = entries.get(entry.id);
  if (known) {
    known.entry = entry;
    render(entry, known.element);
    return;
  }
  const element = document.createElement('article');
  element.className = `message ${entry.role}`;
  element.dataset.id = entry.id;
  transcript.append(element);
  entries.set(entry.id, { entry, element });
  render(entry, element);
}

function queueRender(id: string): void {
  renderQueued.add(id);
  if (frame) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    const ids = renderQueued;
    renderQueued = new Set();
    for (const queued of ids) {
      const known = entries.get(queued);
      if (known) render(known.entry, known.element);
    }
    scrollToEnd();
  });
}

function render(entry: ChatEntry, element: HTMLElement): void {
  if (entry.role === 'agent') {
    renderStep(entry, element);
    return;
  }
  if (entry.role === 'task') {
    renderTaskResult(entry, element);
    return;
  }
  const header = el(
    'div',
    'role',
    entry.role === 'user' ? (entry.task ? 'You · task' : 'You') : `AIHub · ${entry.model}`,
  );
  if (entry.role === 'user') {
    element.classList.toggle('task-request', entry.task === true);
    element.replaceChildren(header, el('div', 'user-text', entry.text));
    if (entry.context?.length)
      element.append(el('div', 'sent-context', `with ${entry.context.join(', ')}`));
    return;
  }
  element.dataset.status = entry.status;
  element.setAttribute('aria-busy', String(entry.status === 'streaming'));
  const body = el('div', 'markdown');
  const rendered = renderMarkdown(entry.text);
  // markdown-it with raw HTML disabled: the markup is markdown-it's and highlight.js's own, all text escaped.
  body.innerHTML = rendered.html;
  codeBlocksOf.set(body, rendered.codeBlocks);
  const parts: Node[] = [header, body];
  if (entry.status === 'streaming' && entry.text === '')
    parts.push(el('div', 'pending', 'Thinking…'));
  if (entry.status === 'stopped') parts.push(el('div', 'note', 'Stopped.'));
  if (entry.error) parts.push(errorBox(entry.error.message, entry.error.actions));
  if (entry.meta) parts.push(metaLine(entry.meta));
  element.replaceChildren(...parts);
}

function errorBox(message: string, actions: ActionId[]): HTMLElement {
  const error = el('div', 'error');
  error.setAttribute('role', 'alert');
  if (message) error.append(el('p', '', message));
  for (const action of actions) {
    const button = el('button', 'action', ACTION_LABELS[action]) as HTMLButtonElement;
    button.type = 'button';
    button.addEventListener('click', () => post({ type: 'action', action }));
    error.append(button);
  }
  return error;
}

function metaLine(meta: NonNullable<AgentStepEntry['meta']>): HTMLElement {
  const { cost, balance, currency, promptTokens, completionTokens, unpriced } = meta;
  return el(
    'div',
    'meta',
    `Cost ${unpriced ? 'unpriced (not in the catalogue)' : formatMoney(cost, currency)} · Balance ${formatMoney(balance, currency)} · ${promptTokens}+${completionTokens} tokens`,
  );
}

/** An agent step: the model's words, each tool call (arguments, result, diff, approval) and the step's cost. */
function renderStep(entry: AgentStepEntry, element: HTMLElement): void {
  element.dataset.status = entry.status;
  element.dataset.taskId = entry.taskId;
  element.setAttribute('aria-busy', String(entry.status === 'streaming'));
  const parts: Node[] = [el('div', 'role', `AIHub agent · step ${entry.step} · ${entry.model}`)];
  if (entry.text) {
    const body = el('div', 'markdown');
    const rendered = renderMarkdown(entry.text);
    body.innerHTML = rendered.html;
    codeBlocksOf.set(body, rendered.codeBlocks);
    parts.push(body);
  } else if (entry.status === 'streaming') parts.push(el('div', 'pending', 'Thinking…'));
  for (const call of entry.calls) parts.push(renderCall(call, entry.meta?.currency ?? 'INR'));
  if (entry.status === 'stopped') parts.push(el('div', 'note', 'Stopped.'));
  if (entry.error) parts.push(errorBox(entry.error.message, entry.error.actions));
  if (entry.meta) parts.push(metaLine(entry.meta));
  element.replaceChildren(...parts);
}

const CALL_MARKS: Record<ToolCallView['status'], string> = {
  running: '…',
  awaiting: '?',
  done: '✓',
  failed: '✗',
  refused: '⊘',
  rejected: '✗',
  stopped: '■',
};

function renderCall(call: ToolCallView, currency: string): HTMLElement {
  const box = el('div', 'tool-call');
  box.dataset.callId = call.id;
  box.dataset.status = call.status;
  box.dataset.tool = call.tool;
  const head = el('div', 'tool-head');
  head.append(
    el('span', 'tool-mark', CALL_MARKS[call.status]),
    el('span', 'tool-title', call.title),
    el('span', 'tool-status', call.status === 'awaiting' ? 'waiting for you' : call.status),
  );
  if (call.cost) head.append(el('span', 'tool-cost', formatMoney(call.cost, currency)));
  box.append(head);
  const args = document.createElement('details');
  args.className = 'tool-args';
  args.append(el('summary', '', 'Arguments'), el('pre', '', call.args));
  box.append(args);
  if (call.diff) box.append(diffView(call.diff));
  if (call.approval) {
    const kind = call.approval.kind;
    const ask = el('div', 'approval');
    ask.setAttribute('role', 'group');
    ask.setAttribute('aria-label', kind === 'edit' ? 'Apply this edit?' : 'Run this command?');
    ask.append(
      el('span', 'approval-question', kind === 'edit' ? 'Apply this edit?' : 'Run this command?'),
    );
    ask.append(agentButton(kind === 'edit' ? 'Apply' : 'Run', 'approve', call.approval.id));
    if (kind === 'edit')
      ask.append(agentButton('Apply All Edits', 'approve-all', call.approval.id, true));
    ask.append(agentButton('Reject', 'reject', call.approval.id, true));
    if (kind === 'edit') ask.append(agentButton('Open Diff', 'open-diff', call.id, true));
    box.append(ask);
  } else if (call.diff && call.status === 'done') {
    box.append(agentButton('Open Diff', 'open-diff', call.id, true));
  }
  if (call.result !== undefined) {
    const result = document.createElement('details');
    result.className = 'tool-result';
    // Commands' output and refusals are open: they are what the user wants to see.
    result.open =
      call.tool === 'run_command' || call.status === 'refused' || call.status === 'failed';
    result.append(el('summary', '', 'Result'), el('pre', '', call.result));
    box.append(result);
  }
  return box;
}

function agentButton(
  label: string,
  action: string,
  id: string,
  secondary = false,
): HTMLButtonElement {
  const button = el(
    'button',
    secondary ? 'secondary agent-button' : 'agent-button',
    label,
  ) as HTMLButtonElement;
  button.type = 'button';
  button.dataset.agentAction = action;
  button.dataset.id = id;
  return button;
}

/** A unified diff, its lines coloured by kind (text only, never markup). */
function diffView(diff: string): HTMLElement {
  const pre = el('pre', 'tool-diff');
  for (const line of diff.split('\n')) {
    const kind =
      line.startsWith('+++') || line.startsWith('---')
        ? 'file'
        : line.startsWith('+')
          ? 'add'
          : line.startsWith('-')
            ? 'del'
            : line.startsWith('@@')
              ? 'hunk'
              : 'same';
    pre.append(el('span', `diff-${kind}`, `${line}\n`));
  }
  return pre;
}

const TASK_HEADINGS: Record<TaskResultEntry['reason'], string> = {
  finished: 'Task done',
  answered: 'Task done',
  stopped: 'Task stopped',
  steps: 'Task stopped at the step budget',
  cap: 'Task stopped at the spending cap',
  time: 'Task stopped at the time limit',
  error: 'Task failed',
};

/** The end of a task: summary (or why it stopped), steps, total cost, the files, Undo Task. */
function renderTaskResult(entry: TaskResultEntry, element: HTMLElement): void {
  element.dataset.status = entry.status;
  element.dataset.reason = entry.reason;
  element.dataset.taskId = entry.taskId;
  const steps = `${entry.steps} step${entry.steps === 1 ? '' : 's'}`;
  const parts: Node[] = [
    el(
      'div',
      'role',
      `${TASK_HEADINGS[entry.reason]} · ${steps} · Cost ${formatMoney(entry.cost, entry.currency)}`,
    ),
  ];
  const body = el('div', 'markdown');
  body.innerHTML = renderMarkdown(entry.text).html;
  parts.push(body);
  const files = [
    entry.changed.length ? `Changed: ${entry.changed.join(', ')}` : '',
    entry.created.length ? `Created: ${entry.created.join(', ')}` : '',
  ].filter(Boolean);
  if (files.length) parts.push(el('div', 'task-files', files.join(' · ')));
  if (entry.actions?.length && entry.status !== 'done') parts.push(errorBox('', entry.actions));
  if (entry.undone)
    parts.push(el('div', 'note', 'Undone: the files are as they were before the task.'));
  else if (files.length) parts.push(agentButton('Undo Task', 'undo-task', entry.taskId, true));
  element.replaceChildren(...parts);
}

function showMode(mode: ModeView): void {
  const agentOption = modeSelect.querySelector<HTMLOptionElement>('option[value="agent"]')!;
  agentOption.disabled = mode.agentUnavailable !== undefined;
  agentOption.title = mode.agentUnavailable ?? '';
  modeSelect.title = mode.agentUnavailable ?? modeSelect.title;
  modeSelect.value = mode.mode;
  autoApprove.checked = mode.autoApproveEdits;
  applyMode(mode.mode);
}

function applyMode(mode: 'chat' | 'agent'): void {
  document.body.dataset.mode = mode;
  autoApproveLabel.hidden = mode !== 'agent';
  input.placeholder =
    mode === 'agent'
      ? 'Describe a task for the agent… (it reads, edits with your approval, runs commands you allow; Enter to start)'
      : 'Ask AIHub… (@ to mention a file, Enter to send, Shift+Enter for a new line)';
  send.textContent = mode === 'agent' ? 'Start Task' : 'Send';
}

function renderContext(context: ContextView): void {
  const chips: Node[] = [];
  for (const item of context.items) {
    const chip = el('span', `context-item ${item.kind}`);
    chip.dataset.contextId = item.id;
    chip.title = [item.detail, item.note].filter(Boolean).join(' — ');
    if (item.kind === 'active') {
      const toggle = document.createElement('input');
      toggle.type = 'checkbox';
      toggle.id = 'include-active';
      toggle.checked = context.includeActive;
      toggle.title = "Send the active editor's selection (or file) with the next message";
      toggle.addEventListener('change', () =>
        post({ type: 'toggleActive', include: toggle.checked }),
      );
      const label = el('label', 'context-label', item.label) as HTMLLabelElement;
      label.htmlFor = toggle.id;
      chip.append(toggle, label);
      chip.classList.toggle('excluded', !context.includeActive);
    } else {
      chip.append(el('span', 'context-label', item.label));
    }
    chip.append(
      el(
        'span',
        'context-detail',
        `${item.detail} · ≈${item.tokens.toLocaleString('en-US')} tokens${item.note ? ' · trimmed' : ''}`,
      ),
    );
    if (item.kind === 'file') {
      const remove = el('button', 'context-remove', '×') as HTMLButtonElement;
      remove.type = 'button';
      remove.title = `Remove ${item.label} from the context`;
      remove.setAttribute('aria-label', remove.title);
      remove.addEventListener('click', () => post({ type: 'removeContext', id: item.id }));
      chip.append(remove);
    }
    chips.push(chip);
  }
  const add = el('button', 'secondary context-add', '+ File') as HTMLButtonElement;
  add.type = 'button';
  add.id = 'add-file';
  add.title = 'Add a workspace file to the chat (or type @ in the message)';
  add.addEventListener('click', () => post({ type: 'addFile' }));
  const total = el(
    'span',
    'context-total',
    `≈${context.tokens.toLocaleString('en-US')} / ${context.budget.toLocaleString('en-US')} tokens of context`,
  );
  total.id = 'context-tokens';
  total.classList.toggle('over', context.tokens > context.budget);
  const footer = el('div', 'context-footer');
  footer.append(add, total);
  contextBar.replaceChildren(...chips, footer);
}

function renderSpend(spend: SpendView): void {
  const parts = [
    `Session ${formatMoney(spend.session, spend.currency)}`,
    `today ${formatMoney(spend.today, spend.currency)}`,
  ];
  if (spend.cap !== undefined) parts[1] += ` of ${formatMoney(spend.cap, spend.currency)} cap`;
  spendLine.textContent = parts.join(' · ') + (spend.capReached ? ' · cap reached' : '');
  spendLine.classList.toggle('cap-reached', spend.capReached);
}

function renderHistory(conversations: ConversationSummary[], currentId: string): void {
  if (conversations.length === 0) {
    historyPanel.replaceChildren(el('p', 'note', 'No saved conversations yet.'));
    return;
  }
  const list = el('ul', 'history-list');
  for (const conversation of conversations) {
    const item = el('li', conversation.id === currentId ? 'current' : '');
    item.dataset.conversationId = conversation.id;
    const open = el('button', 'history-open', conversation.title) as HTMLButtonElement;
    open.type = 'button';
    open.title = `Open "${conversation.title}" (${conversation.messages} messages, ${new Date(conversation.updatedAt).toLocaleString()})`;
    open.addEventListener('click', () => {
      post({ type: 'openConversation', id: conversation.id });
      historyPanel.hidden = true;
      historyButton.setAttribute('aria-expanded', 'false');
    });
    const rename = el('button', 'secondary history-rename', 'Rename') as HTMLButtonElement;
    rename.type = 'button';
    rename.addEventListener('click', () =>
      post({ type: 'renameConversation', id: conversation.id }),
    );
    const remove = el('button', 'secondary history-delete', 'Delete') as HTMLButtonElement;
    remove.type = 'button';
    remove.addEventListener('click', () =>
      post({ type: 'deleteConversation', id: conversation.id }),
    );
    item.append(open, rename, remove);
    list.append(item);
  }
  historyPanel.replaceChildren(list);
}

function showTitle(title: string): void {
  titleLine.textContent = title;
  titleLine.title = title;
}

function insertIntoInput(text: string): void {
  const start = input.selectionStart ?? input.value.length;
  const end = input.selectionEnd ?? start;
  input.value = input.value.slice(0, start) + text + input.value.slice(end);
  input.selectionStart = input.selectionEnd = start + text.length;
  vscode.setState({ draft: input.value });
  input.focus();
}

function el(tag: string, className = '', text?: string): HTMLElement {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (text !== undefined) element.textContent = text;
  return element;
}

function scrollToEnd(): void {
  transcript.scrollTop = transcript.scrollHeight;
}

const saved = vscode.getState() as { draft?: string } | undefined;
if (saved?.draft) input.value = saved.draft;
post({ type: 'ready' });
