import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseInline, parseMarkdown } from '../../../media/markdown.js';

test('a reply with prose, a list and a code block', () => {
  const blocks = parseMarkdown('# Title\n\nSome **bold** and `code`.\n\n- one\n- two\n\n```ts\nconst a = 1;\n```\nAfter.');
  assert.deepEqual(blocks, [
    { t: 'h', level: 1, c: [{ t: 'text', v: 'Title' }] },
    { t: 'p', c: [{ t: 'text', v: 'Some ' }, { t: 'strong', c: [{ t: 'text', v: 'bold' }] }, { t: 'text', v: ' and ' }, { t: 'code', v: 'code' }, { t: 'text', v: '.' }] },
    { t: 'ul', items: [[{ t: 'text', v: 'one' }], [{ t: 'text', v: 'two' }]] },
    { t: 'code', lang: 'ts', v: 'const a = 1;', closed: true },
    { t: 'p', c: [{ t: 'text', v: 'After.' }] },
  ]);
});

test('a code block still streaming is shown as code', () => {
  assert.deepEqual(parseMarkdown('Here:\n```py\nprint(1)\nprint('), [
    { t: 'p', c: [{ t: 'text', v: 'Here:' }] },
    { t: 'code', lang: 'py', v: 'print(1)\nprint(', closed: false },
  ]);
});

test('HTML is text, never markup', () => {
  const blocks = parseMarkdown('<img src=x onerror=alert(1)> <script>x</script>');
  assert.deepEqual(blocks, [{ t: 'p', c: [{ t: 'text', v: '<img src=x onerror=alert(1)> <script>x</script>' }] }]);
});

test('only http(s) links become links', () => {
  assert.deepEqual(parseInline('[docs](https://example.com/a)'), [
    { t: 'link', href: 'https://example.com/a', c: [{ t: 'text', v: 'docs' }] },
  ]);
  assert.deepEqual(parseInline('[run](command:workbench.action.terminal.new)'), [{ t: 'text', v: 'run' }]);
  assert.deepEqual(parseInline('[x](javascript:alert(1))'), [{ t: 'text', v: 'x' }, { t: 'text', v: ')' }]);
});

test('ordered lists keep their start; emphasis inside words is literal', () => {
  assert.deepEqual(parseMarkdown('3. c\n4. d'), [{ t: 'ol', start: 3, items: [[{ t: 'text', v: 'c' }], [{ t: 'text', v: 'd' }]] }]);
  assert.deepEqual(parseInline('snake_case_name and *it*'), [
    { t: 'text', v: 'snake_case_name and ' },
    { t: 'em', c: [{ t: 'text', v: 'it' }] },
  ]);
});
