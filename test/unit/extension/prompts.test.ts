import assert from 'node:assert/strict';
import { test } from 'node:test';
import { explainPrompt, generateMessages, generationRequest } from '../../../extension/prompts.js';

test('a description becomes an explicit request to write code', () => {
  assert.equal(
    generationRequest('a function that adds two numbers'),
    'Write a function that adds two numbers.',
  );
  assert.equal(generationRequest('Function to parse dates.'), 'Write Function to parse dates.');
  assert.equal(generationRequest('write a CLI in go'), 'write a CLI in go.');
  assert.equal(generationRequest('Sort the list by date'), 'Write code to sort the list by date.');
  assert.equal(
    generationRequest('  implement retry with backoff...  '),
    'implement retry with backoff.',
  );
});

test('generate messages name the language, and carry the selection when there is one', () => {
  const [system, user] = generateMessages(
    'a function that adds two numbers',
    'python',
    '`calc.py`',
    '',
  );
  assert.equal(system!.role, 'system');
  assert.match(system!.content, /python code for `calc\.py`/);
  assert.match(system!.content, /no Markdown code fences/);
  assert.equal(user!.content, 'Write a function that adds two numbers.\nLanguage: python.');

  const [, rewrite] = generateMessages(
    'make it async',
    'typescript',
    'an untitled file',
    'const x = ```;',
  );
  assert.equal(
    rewrite!.content,
    'make it async.\nLanguage: typescript.\nRewrite this selected code; your reply replaces it:\n````typescript\nconst x = ```;\n````',
  );
});

test('the explain prompt names the language, the file and the lines, and fences the code safely', () => {
  assert.equal(
    explainPrompt('let a = 1;\n', 'javascript', 'src/a.js', 3, 4),
    'Explain this javascript code from `src/a.js` (lines 3-4):\n\n```javascript\nlet a = 1;\n```',
  );
});
