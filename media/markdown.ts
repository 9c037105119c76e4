// Chat replies as HTML through markdown-it (CommonMark + GFM tables, strikethrough, autolinks) with
// raw HTML disabled, so a reply can only ever produce the markup markdown-it itself writes: text is
// escaped, and links that are not http(s) or mailto are dropped. Code blocks are highlighted with
// highlight.js (its common languages; its output escapes the code) and carry Copy and Insert
// buttons that the webview script wires by index. Task list items ("- [x] done") get a disabled
// checkbox. Tolerates a reply that is still streaming (an unclosed fence is a code block). Pure.
import hljs from 'highlight.js/lib/common';
import MarkdownIt from 'markdown-it';
import type Token from 'markdown-it/lib/token.mjs';

export interface CodeBlock {
  code: string;
  /** The fence's tag (`ts`, `python`...), empty when it had none. */
  lang: string;
}

export interface RenderedMarkdown {
  html: string;
  codeBlocks: CodeBlock[];
}

/** Longest code a block is highlighted for; longer code is shown plain (highlighting is O(n) but not free). */
const MAX_HIGHLIGHT_CHARS = 50_000;

const md = new MarkdownIt({ html: false, linkify: true, typographer: false, breaks: false });
md.validateLink = (url) => /^(https?:|mailto:)/i.test(url.trim());
md.core.ruler.after('inline', 'aihub_task_lists', (state) => {
  markTaskItems(
    state.tokens,
    state.Token as unknown as new (type: string, tag: string, nesting: number) => Token,
  );
  return true;
});

md.renderer.rules.fence = (tokens, idx, _options, env: { codeBlocks: CodeBlock[] }) => {
  const token = tokens[idx]!;
  const lang = token.info.trim().split(/\s+/)[0] ?? '';
  const code = token.content.replace(/\n$/, '');
  const index = env.codeBlocks.push({ code, lang }) - 1;
  return codeBlockHtml(code, lang, index);
};
md.renderer.rules.code_block = (tokens, idx, _options, env: { codeBlocks: CodeBlock[] }) => {
  const code = tokens[idx]!.content.replace(/\n$/, '');
  const index = env.codeBlocks.push({ code, lang: '' }) - 1;
  return codeBlockHtml(code, '', index);
};

export function renderMarkdown(source: string): RenderedMarkdown {
  const env = { codeBlocks: [] as CodeBlock[] };
  const html = md.render(source, env);
  return { html, codeBlocks: env.codeBlocks };
}

/** highlight.js's HTML for the code (escaped by it), or the escaped code when the language is unknown. */
export function highlight(
  code: string,
  lang: string,
): { html: string; language: string | undefined } {
  const name = lang.toLowerCase();
  if (code.length <= MAX_HIGHLIGHT_CHARS && name && hljs.getLanguage(name)) {
    const result = hljs.highlight(code, { language: name, ignoreIllegals: true });
    return { html: result.value, language: result.language };
  }
  return { html: md.utils.escapeHtml(code), language: undefined };
}

function codeBlockHtml(code: string, lang: string, index: number): string {
  const escape = md.utils.escapeHtml;
  const { html, language } = highlight(code, lang);
  const codeClass = language ? ` class="hljs language-${escape(language)}"` : ' class="hljs"';
  return (
    `<div class="code-block" data-code-index="${index}">` +
    `<div class="code-bar"><span class="code-lang">${escape(lang || 'code')}</span>` +
    `<button type="button" class="code-action" data-code-action="copy" title="Copy the code">Copy</button>` +
    `<button type="button" class="code-action" data-code-action="insert" title="Insert the code at the cursor in the editor (or in a new editor when none is open)">Insert</button>` +
    `</div><pre tabindex="0"><code${codeClass}>${html}</code></pre></div>\n`
  );
}

const TASK = /^\[([ xX])\]\s+/;

/** "- [ ] a" / "- [x] b": a disabled checkbox in place of the marker, and a class on the item and its list. */
function markTaskItems(
  tokens: Token[],
  TokenClass: new (type: string, tag: string, nesting: number) => Token,
): void {
  for (let i = 2; i < tokens.length; i++) {
    const inline = tokens[i]!;
    if (
      inline.type !== 'inline' ||
      tokens[i - 1]!.type !== 'paragraph_open' ||
      tokens[i - 2]!.type !== 'list_item_open'
    )
      continue;
    const match = TASK.exec(inline.content);
    const first = inline.children?.[0];
    if (!match || !first || first.type !== 'text' || !TASK.test(first.content)) continue;
    first.content = first.content.replace(TASK, '');
    const checkbox = new TokenClass('html_inline', '', 0);
    const checked = match[1] !== ' ';
    checkbox.content = `<input type="checkbox" class="task-list-item-checkbox" disabled${checked ? ' checked' : ''}> `;
    inline.children!.unshift(checkbox);
    tokens[i - 2]!.attrJoin('class', 'task-list-item');
    for (let j = i - 3; j >= 0; j--) {
      const open = tokens[j]!;
      if (
        (open.type === 'bullet_list_open' || open.type === 'ordered_list_open') &&
        open.level === tokens[i - 2]!.level - 1
      ) {
        if (!open.attrGet('class')?.includes('contains-task-list'))
          open.attrJoin('class', 'contains-task-list');
        break;
      }
    }
  }
}
