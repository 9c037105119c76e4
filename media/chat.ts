// The chat webview's script: mirrors the transcript the extension sends, renders replies as
// Markdown (as DOM nodes, never as HTML strings), and posts the user's intents back.
import { ACTION_LABELS, formatMoney, type ChatEntry, type FromWebview, type ModelChoice, type ToWebview } from '../extension/chat/protocol.js';
import { parseMarkdown, type Block, type Inline } from './markdown.js';

declare function acquireVsCodeApi(): { postMessage(message: FromWebview): void; getState(): unknown; setState(state: unknown): void };

const vscode = acquireVsCodeApi();
const transcript = byId<HTMLElement>('transcript');
const input = byId<HTMLTextAreaElement>('input');
const composer = byId<HTMLFormElement>('composer');
const send = byId<HTMLButtonElement>('send');
const stop = byId<HTMLButtonElement>('stop');
const modelSelect = byId<HTMLSelectElement>('model');
const newChat = byId<HTMLButtonElement>('new-chat');

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
      scrollToEnd();
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
input.addEventListener('input', () => vscode.setState({ draft: input.value }));
document.addEventListener('keydown', (event) => {
  if (event.key === 'Escape' && busy) {
    event.preventDefault();
    post({ type: 'stop' });
  }
});
stop.addEventListener('click', () => post({ type: 'stop' }));
newChat.addEventListener('click', () => post({ type: 'newChat' }));
modelSelect.addEventListener('change', () => post({ type: 'selectModel', model: modelSelect.value }));

function submit(): void {
  const text = input.value.trim();
  if (!text || busy) return;
  post({ type: 'send', text });
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
    return;
  }
  element.dataset.status = entry.status;
  element.setAttribute('aria-busy', String(entry.status === 'streaming'));
  const body = el('div', 'markdown');
  body.append(...parseMarkdown(entry.text).map(renderBlock));
  const parts: Node[] = [header, body];
  if (entry.status === 'streaming' && entry.text === '') parts.push(el('div', 'pending', 'Thinking…'));
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

function renderBlock(block: Block): Node {
  switch (block.t) {
    case 'p':
      return withInlines(el('p'), block.c);
    case 'h':
      return withInlines(el(`h${Math.min(6, block.level + 2)}`), block.c);
    case 'quote':
      return withInlines(el('blockquote'), block.c);
    case 'hr':
      return el('hr');
    case 'ul':
    case 'ol': {
      const list = el(block.t);
      if (block.t === 'ol' && block.start !== 1) list.setAttribute('start', String(block.start));
      list.append(...block.items.map((item) => withInlines(el('li'), item)));
      return list;
    }
    case 'code':
      return codeBlock(block.v, block.lang);
  }
}

function codeBlock(code: string, language: string): Node {
  const wrapper = el('div', 'code-block');
  const bar = el('div', 'code-bar');
  bar.append(el('span', 'code-lang', language || 'code'));
  const copy = el('button', 'code-action', 'Copy') as HTMLButtonElement;
  copy.type = 'button';
  copy.title = 'Copy the code';
  copy.addEventListener('click', () => post({ type: 'copy', text: code }));
  const insert = el('button', 'code-action', 'Insert') as HTMLButtonElement;
  insert.type = 'button';
  insert.title = 'Insert the code at the cursor in the editor (or in a new editor when none is open)';
  insert.addEventListener('click', () => post({ type: 'insert', text: code, ...(language ? { language } : {}) }));
  bar.append(copy, insert);
  const pre = el('pre');
  pre.tabIndex = 0;
  pre.append(el('code', language ? `language-${language}` : '', code));
  wrapper.append(bar, pre);
  return wrapper;
}

function withInlines(parent: HTMLElement, inlines: Inline[]): HTMLElement {
  for (const inline of inlines) parent.append(renderInline(inline));
  return parent;
}

function renderInline(inline: Inline): Node {
  switch (inline.t) {
    case 'text':
      return document.createTextNode(inline.v);
    case 'code':
      return el('code', '', inline.v);
    case 'strong':
      return withInlines(el('strong'), inline.c);
    case 'em':
      return withInlines(el('em'), inline.c);
    case 'link': {
      const link = withInlines(el('a'), inline.c) as HTMLAnchorElement;
      link.href = inline.href;
      link.title = inline.href;
      link.addEventListener('click', (event) => {
        event.preventDefault();
        post({ type: 'openLink', href: inline.href });
      });
      return link;
    }
  }
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
