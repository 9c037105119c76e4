// The built-in engine's fill-in-the-middle: it completes the line and closes what is open.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  FIM_MIDDLE,
  FIM_PREFIX,
  FIM_SUFFIX,
  fillMiddle,
  parseFim,
} from '../../../gateway/llm/engines/builtin-fim.js';

test('parseFim finds prefix and suffix; other text is not FIM', () => {
  assert.deepEqual(parseFim(`${FIM_PREFIX}a(${FIM_SUFFIX}\nb${FIM_MIDDLE}`), {
    prefix: 'a(',
    suffix: '\nb',
  });
  assert.equal(parseFim('hello'), null);
});

test('closes the call the line opened and ends the statement where the file uses semicolons', () => {
  assert.equal(fillMiddle('const a = 1;\nconsole.log(add(1, 2', '\n'), '));');
  assert.equal(fillMiddle('const a = 1;\nconst xs = [1, 2, 3', ''), '];');
  assert.equal(fillMiddle('xs = [1, 2, 3', ''), ']');
});

test('closes a block opened on an earlier line, at its indentation, unless the suffix closes it', () => {
  assert.equal(
    fillMiddle('function add(a, b) {\n  return a + b;', '\n\nconsole.log(add(1, 2));'),
    '\n}',
  );
  assert.equal(fillMiddle('function add(a, b) {\n  return a + b;', '\n}\n'), '');
  assert.equal(fillMiddle('class A {\n  m() {\n    return 1;', ''), '\n  }\n}');
});

test('a line that opens a block gets an empty body and its closing brace', () => {
  assert.equal(fillMiddle('if (ready) {', ''), '\n  \n}');
});

test('python: no semicolons; brackets in strings and comments are ignored', () => {
  assert.equal(fillMiddle('def f(x):\n    return max(x, "(" ', ''), ')');
  assert.equal(fillMiddle('x = 1  # (\nprint(x', ''), ')');
});
