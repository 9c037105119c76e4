// The chat webview's script: mirrors the transcript the extension sends, renders replies as
// Markdown (as DOM nodes, never as HTML strings), and posts the user's intents back.
import {
  ACTION_LABELS,
  formatMoney,
  type ChatEntry,
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
      setModels(message.models, message.model);
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
      setModels(message.models, message.model);
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
modelSelect.addEventListener('change', () =>
  post({ type: 'selectModel', model: modelSelect.value }),
);

function submit(): void {
  const text = input.value.trim();
  if (!text || busy) return;
  post({ type: 'send', text, ...(modelSelect.value ? { model: modelSelect.value } : {}) });
  input.value = '';
  vscode.setState({ draft: '' });
}

function setBusy(value: boolean): void {
  busy = value;
  stop.hidden = !value;
  send.disabled = value;
  document.body.classList.toggle('busy', value);
}

function setModels(models: ModelChoice[], selected: string): void {
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
  const header = el('div', 'role', entry.role === 'user' ? 'You' : `AIHub · ${entry.model}`);
  if (entry.role === 'user') {
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
  if (entry.error) {
    const error = el('div', 'error');
    error.setAttribute('role', 'alert');
    error.append(el('p', '', entry.error.message));
    for (const action of entry.error.actions) {
      const button = el('button', 'action', ACTION_LABELS[action]) as HTMLButtonElement;
      button.type = 'button';
      button.addEventListener('click', () => post({ type: 'action', action }));
      error.append(button);
    }
    parts.push(error);
  }
  if (entry.meta) {
    const { cost, balance, currency, promptTokens, completionTokens } = entry.meta;
    parts.push(
      el(
        'div',
        'meta',
        `Cost ${formatMoney(cost, currency)} · Balance ${formatMoney(balance, currency)} · ${promptTokens}+${completionTokens} tokens`,
      ),
    );
  }
  element.replaceChildren(...parts);
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
