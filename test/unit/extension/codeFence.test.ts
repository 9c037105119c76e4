import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  FenceStripper,
  applyStep,
  fenced,
  languageIdForFence,
  stripCodeFences,
} from '../../../extension/codeFence.js';

const cases: Array<[string, string, string]> = [
  [
    'fenced with a language',
    '```ts\nconst a = 1;\nconst b = 2;\n```\n',
    'const a = 1;\nconst b = 2;',
  ],
  ['fenced, leading blank lines', '\n\n```\nx()\n```', 'x()'],
  ['prose after the fence is dropped', '```py\nprint(1)\n```\nThis prints 1.', 'print(1)'],
  ['unclosed fence (stopped stream)', '```js\nlet x = 1;\nlet y', 'let x = 1;\nlet y'],
  ['plain code passes through', 'def f():\n    return 1\n', 'def f():\n    return 1\n'],
  ['inline backticks are not a fence', '`x` is a variable', '`x` is a variable'],
  [
    'prose before the fence is dropped',
    'Here is the code:\n\n```python\ndef f():\n    pass\n```\n\nEnjoy.',
    'def f():\n    pass',
  ],
  ['only the first fenced block counts', 'a\n```\none\n```\nb\n```\ntwo\n```', 'one'],
  ['code with a template literal line is not a fence', 'const a =\n`x`;\n', 'const a =\n`x`;\n'],
  ['tilde fences', '~~~\na\n~~~', 'a'],
  ['a shorter inner fence does not close', '````md\n```\ninner\n```\n````', '```\ninner\n```'],
  ['indented code keeps its indentation', '```c\n  int x;\n    y();\n```', '  int x;\n    y();'],
  ['blank lines inside are kept', '```\na\n\nb\n```', 'a\n\nb'],
  [
    'CRLF line breaks become LF (the editor applies its own EOL)',
    '```ts\r\nconst a = 1;\r\nb();\r\n```\r\n',
    'const a = 1;\nb();',
  ],
  ['empty reply', '', ''],
];

for (const [name, input, expected] of cases) {
  test(`stripCodeFences: ${name}`, () => {
    assert.equal(stripCodeFences(input), expected);
  });

  test(`streaming gives the same result at every split: ${name}`, () => {
    for (let size = 1; size <= Math.max(1, input.length); size++) {
      const stripper = new FenceStripper();
      let out = '';
      for (let i = 0; i < input.length; i += size)
        out = applyStep(out, stripper.push(input.slice(i, i + size)));
      out = applyStep(out, stripper.end());
      assert.equal(out, expected, `chunk size ${size}`);
    }
  });
}

test('streaming emits code before the reply ends', () => {
  const stripper = new FenceStripper();
  assert.deepEqual(stripper.push('```ts\n'), { reset: true, text: '' });
  assert.deepEqual(stripper.push('const a'), { reset: false, text: 'const a' });
  assert.deepEqual(stripper.push(' = 1;\n'), { reset: false, text: ' = 1;' });
  assert.deepEqual(stripper.push('``'), { reset: false, text: '' });
  assert.deepEqual(stripper.push('`\nafterwards'), { reset: false, text: '' });
  assert.deepEqual(stripper.end(), { reset: false, text: '' });
});

test('prose streams until a fence shows it was prose, then is reset', () => {
  const stripper = new FenceStripper();
  assert.deepEqual(stripper.push('Here you go:\n'), { reset: false, text: 'Here you go:\n' });
  assert.deepEqual(stripper.push('```js\nx();\n'), { reset: true, text: 'x();' });
  assert.deepEqual(stripper.end(), { reset: false, text: '' });
});

test('fenced() uses a fence longer than any backtick run in the code', () => {
  assert.equal(fenced('a\n', 'js'), '```js\na\n```');
  assert.equal(fenced('x = ```y```', 'md'), '````md\nx = ```y```\n````');
  assert.equal(stripCodeFences(fenced('x = ```y```', 'md')), 'x = ```y```');
});

test('languageIdForFence: fence tags and their aliases become known VS Code language ids, anything else plain text', () => {
  const known = new Set([
    'typescript',
    'python',
    'shellscript',
    'cpp',
    'rust',
    'plaintext',
    'yaml',
    'go',
  ]);
  assert.equal(languageIdForFence('ts', known), 'typescript');
  assert.equal(languageIdForFence('TypeScript', known), 'typescript');
  assert.equal(languageIdForFence('py', known), 'python');
  assert.equal(languageIdForFence('bash', known), 'shellscript');
  assert.equal(languageIdForFence('c++', known), 'cpp');
  assert.equal(languageIdForFence('golang', known), 'go');
  assert.equal(languageIdForFence('yml', known), 'yaml');
  assert.equal(languageIdForFence('rust', known), 'rust');
  assert.equal(
    languageIdForFence('cobol', known),
    'plaintext',
    'not a language this VS Code knows',
  );
  assert.equal(languageIdForFence('', known), 'plaintext');
  assert.equal(languageIdForFence(undefined, known), 'plaintext');
});
