import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CURSOR, cleanCompletion, fimMessages, fimStops } from '../../../extension/inline/fim.js';

const line = (prefix: string, suffix = '') => ({ prefix, suffix, mode: 'line' as const });
const block = (prefix: string, suffix = '') => ({ prefix, suffix, mode: 'block' as const });

test('the FIM prompt marks the cursor between the code before and after it', () => {
  const messages = fimMessages({
    prefix: 'const a = ',
    suffix: ';\nexport {};',
    languageId: 'typescript',
    fileName: 'a.ts',
    mode: 'line',
  });
  assert.equal(messages.length, 2);
  assert.match(messages[0]!.content, /code completion engine for typescript/);
  assert.match(messages[0]!.content, /rest of the current line/);
  assert.equal(messages[1]!.content, `File: a.ts\nconst a = ${CURSOR};\nexport {};`);
  assert.deepEqual(fimStops('line'), ['\n']);
  assert.equal(fimStops('block'), undefined);
});

test('code fences around the completion are stripped', () => {
  assert.equal(cleanCompletion('```ts\nreturn a + b;\n```', block('  ')), 'return a + b;');
});

test('single-line mode cuts at the first line break', () => {
  assert.equal(cleanCompletion('a + b;\n}\nmore', line('return ')), 'a + b;');
});

test('block mode keeps lines until the code after the cursor repeats', () => {
  const suffix = '\n}\n\nexport const z = 1;\n';
  assert.equal(
    cleanCompletion('{\n  return a + b;\n}\n\nexport const z = 1;', block('function f() ', suffix)),
    '{\n  return a + b;',
  );
});

test('an echo of the current line is removed', () => {
  assert.equal(
    cleanCompletion('const total = items.length;', line('const total = ')),
    'items.length;',
  );
  assert.equal(cleanCompletion('  return x;', line('  retur')), 'n x;');
});

test('the completion stops where it runs into the rest of the line', () => {
  assert.equal(cleanCompletion('a, b)', line('add(', ')')), 'a, b');
  assert.equal(cleanCompletion('"hello");', line('print(', ');')), '"hello"');
});

test('an indented cursor does not get the indentation twice', () => {
  assert.equal(cleanCompletion('    return 1;', block('def f():\n    ')), 'return 1;');
});

test('nothing usable is the empty string', () => {
  assert.equal(cleanCompletion('```\n```', line('x')), '');
  assert.equal(cleanCompletion(`${CURSOR}`, line('x')), '');
});
