import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  enclosingBlockByIndent,
  estimateTokens,
  headChars,
  importLines,
  tailChars,
  trimAround,
} from '../../../extension/context/estimate.js';

const numbered = (n: number): string =>
  Array.from({ length: n }, (_, i) => `line ${String(i + 1).padStart(3, '0')}`).join('\n');

test('the token estimate is about four characters per token', () => {
  assert.equal(estimateTokens(''), 0);
  assert.equal(estimateTokens('abcd'), 1);
  assert.equal(estimateTokens('abcde'), 2);
});

test('a file within the budget is kept whole', () => {
  const text = numbered(10);
  assert.deepEqual(trimAround(text, 3, 3, 10_000), {
    text,
    firstLine: 1,
    lastLine: 10,
    totalLines: 10,
    trimmed: false,
  });
});

test('an oversized file is trimmed to whole lines around the focus, within the budget', () => {
  const text = numbered(100); // 8 characters + newline per line
  const kept = trimAround(text, 49, 50, 9 * 10);
  assert.equal(kept.trimmed, true);
  assert.ok(kept.text.length <= 90);
  assert.ok(kept.text.includes('line 050') && kept.text.includes('line 051'), 'the focus is kept');
  assert.equal(kept.lastLine - kept.firstLine + 1, kept.text.split('\n').length);
  assert.ok(
    kept.firstLine >= 44 && kept.lastLine <= 56,
    `centred: ${kept.firstLine}-${kept.lastLine}`,
  );
  assert.equal(
    kept.text,
    text
      .split('\n')
      .slice(kept.firstLine - 1, kept.lastLine)
      .join('\n'),
  );
});

test('a focus larger than the budget keeps its first lines; no budget keeps nothing', () => {
  const text = numbered(100);
  const kept = trimAround(text, 10, 90, 27);
  assert.equal(kept.firstLine, 11);
  assert.ok(kept.text.startsWith('line 011'));
  assert.equal(trimAround(text, 0, 0, 0).text, '');
});

test('import lines of several languages are found, bounded', () => {
  const ts =
    "import { a } from './a.js';\nimport type B from 'b';\nconst fs = require('node:fs');\n\nexport function f() {}\nimport('./lazy');\n";
  assert.equal(
    importLines(ts),
    "import { a } from './a.js';\nimport type B from 'b';\nconst fs = require('node:fs');\nimport('./lazy');",
  );
  assert.equal(
    importLines('from os import path\nimport sys\n\ndef f():\n    import json\n'),
    'from os import path\nimport sys\n    import json',
  );
  assert.equal(importLines('#include <stdio.h>\nint main() {}\n'), '#include <stdio.h>');
  assert.ok(
    importLines(Array.from({ length: 500 }, (_, i) => `import m${i} from 'm${i}';`).join('\n'))
      .length <= 3_000,
  );
});

test('head and tail cut at line boundaries', () => {
  assert.equal(tailChars('aaa\nbbb\nccc', 6), 'ccc');
  assert.equal(headChars('aaa\nbbb\nccc', 6), 'aaa\n');
  assert.equal(tailChars('short', 10), 'short');
});

test('the enclosing block by indentation: a brace function, a Python def', () => {
  const ts =
    'const x = 1;\nfunction add(a, b) {\n  const s = a + b;\n  return s;\n}\nconst y = 2;\n';
  assert.deepEqual(enclosingBlockByIndent(ts, 2, 2), { first: 1, last: 4 });
  const py =
    'import os\n\nclass A:\n    def f(self):\n        x = 1\n        return x\n\n    def g(self):\n        pass\n';
  assert.deepEqual(enclosingBlockByIndent(py, 4, 4), { first: 3, last: 5 });
  assert.equal(enclosingBlockByIndent('a = 1\nb = 2\n', 1, 1), undefined);
});
