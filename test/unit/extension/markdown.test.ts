import assert from 'node:assert/strict';
import { test } from 'node:test';
import { highlight, renderMarkdown } from '../../../media/markdown.js';

test('a table renders as a table with its header and cells', () => {
  const { html } = renderMarkdown(
    '| name | cost |\n| --- | ---: |\n| lite | 0.01 |\n| max | 5 |\n',
  );
  assert.match(
    html,
    /<table>\s*<thead>\s*<tr>\s*<th>name<\/th>\s*<th style="text-align:right">cost<\/th>/,
  );
  assert.equal(html.match(/<tr>/g)?.length, 3);
  assert.match(html, /<td>lite<\/td>/);
});

test('a nested list is a list inside a list item', () => {
  const { html } = renderMarkdown('- outer\n  - inner a\n  - inner b\n- second\n');
  assert.match(
    html,
    /<ul>\s*<li>outer\s*<ul>\s*<li>inner a<\/li>\s*<li>inner b<\/li>\s*<\/ul>\s*<\/li>\s*<li>second<\/li>\s*<\/ul>/,
  );
});

test('task list items get a disabled checkbox, checked when done', () => {
  const { html } = renderMarkdown('- [x] done\n- [ ] todo\n- plain [ ] text\n');
  assert.match(html, /<ul class="contains-task-list">/);
  assert.match(
    html,
    /<li class="task-list-item"><input type="checkbox" class="task-list-item-checkbox" disabled checked> done<\/li>/,
  );
  assert.match(
    html,
    /<li class="task-list-item"><input type="checkbox" class="task-list-item-checkbox" disabled> todo<\/li>/,
  );
  assert.match(html, /<li>plain \[ \] text<\/li>/);
});

test('code blocks are highlighted, keep their exact code, and carry Copy and Insert', () => {
  const { html, codeBlocks } = renderMarkdown(
    'Text\n\n```ts\nconst a: number = 1; // <b>\n```\n\n    indented()\n',
  );
  assert.deepEqual(codeBlocks, [
    { code: 'const a: number = 1; // <b>', lang: 'ts' },
    { code: 'indented()', lang: '' },
  ]);
  assert.match(html, /<span class="hljs-keyword">const<\/span>/);
  assert.match(html, /&lt;b&gt;/, 'the code is escaped inside the highlighting');
  assert.equal(html.match(/data-code-action="copy"/g)?.length, 2);
  assert.equal(html.match(/data-code-action="insert"/g)?.length, 2);
  assert.match(html, /data-code-index="0"[\s\S]*data-code-index="1"/);
});

test('a code block still streaming (no closing fence) is shown as code', () => {
  const { codeBlocks } = renderMarkdown('Here:\n```py\nprint(1)\nprint(');
  assert.deepEqual(codeBlocks, [{ code: 'print(1)\nprint(', lang: 'py' }]);
});

test('raw HTML is text, never markup', () => {
  const { html } = renderMarkdown(
    '<img src=x onerror=alert(1)> <script>x</script>\n\n<div>block</div>',
  );
  assert.ok(!/<img|<script|<div>/.test(html), html);
  assert.match(html, /&lt;script&gt;/);
});

test('only http(s) and mailto links become links; bare URLs are linked', () => {
  assert.match(
    renderMarkdown('[docs](https://example.com/a)').html,
    /<a href="https:\/\/example.com\/a">docs<\/a>/,
  );
  assert.ok(!renderMarkdown('[x](javascript:alert(1))').html.includes('<a'));
  assert.ok(!renderMarkdown('[x](file:///etc/passwd)').html.includes('<a'));
  assert.match(
    renderMarkdown('see https://example.com/b now').html,
    /<a href="https:\/\/example.com\/b">/,
  );
});

test('escapes, strikethrough and headings', () => {
  const { html } = renderMarkdown('# T\n\n\\*not em\\* ~~gone~~ **bold**');
  assert.match(html, /<h1>T<\/h1>/);
  assert.match(html, /\*not em\*/);
  assert.match(html, /<s>gone<\/s>/);
  assert.match(html, /<strong>bold<\/strong>/);
});

test('an unknown language is shown escaped, unhighlighted', () => {
  assert.deepEqual(highlight('<x>', 'nosuchlang'), { html: '&lt;x&gt;', language: undefined });
  assert.equal(highlight('x = 1', 'python').language, 'python');
});
