import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  isPlainChunk,
  isPlainCompletion,
  upstreamChunkSchema,
  upstreamCompletionSchema,
} from '../../../gateway/llm/types.js';

// Values built from pieces that are valid, borderline or wrong for each field.
const tokens = [0, 1, 15, 100_000_000, 100_000_001, -1, 1.5, '7', null, undefined, Number.NaN];
const usages = [
  undefined,
  null,
  'x',
  [],
  ...tokens.flatMap((p) => [
    { prompt_tokens: p, completion_tokens: 3 },
    { prompt_tokens: 3, completion_tokens: p, total_tokens: 6 },
  ]),
];
const indexes = [undefined, 0, 3, -1, 1.5, '0', null, 2 ** 60];
const finishes = [undefined, null, 'stop', 'length', 7, {}];
const contents = [undefined, null, '', 'Hello', 3, ['a'], { text: 'x' }];
const roles = [undefined, 'assistant', 5];

function pick<T>(values: readonly T[], random: () => number): T {
  return values[Math.floor(random() * values.length)]!;
}

function rng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

function strip<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

function holder(random: () => number): unknown {
  const r = random();
  if (r < 0.05) return 'not an object';
  if (r < 0.1) return undefined;
  return strip({
    role: pick(roles, random),
    content: pick(contents, random),
    ...(random() < 0.2 ? { tool_calls: [{ id: 't' }] } : {}),
  });
}

function choices(random: () => number, key: 'delta' | 'message'): unknown {
  const r = random();
  if (r < 0.05) return undefined;
  if (r < 0.1) return 'nope';
  const count = random() < 0.05 ? 17 : Math.floor(random() * 3);
  return Array.from({ length: count }, () =>
    random() < 0.03
      ? null
      : strip({
          index: pick(indexes, random),
          [key]: holder(random),
          finish_reason: pick(finishes, random),
          logprobs: null,
        }),
  );
}

test('upstream shapes: what the hand check accepts, the zod schema accepts unchanged (chunks and completions, 20,000 random values)', () => {
  const random = rng(42);
  let plain_chunks = 0;
  let plain_completions = 0;
  for (let i = 0; i < 10_000; i++) {
    const chunk = strip({
      id: 'c',
      object: 'chat.completion.chunk',
      choices: choices(random, 'delta'),
      usage: pick(usages, random),
    });
    if (isPlainChunk(chunk)) {
      plain_chunks++;
      const parsed = upstreamChunkSchema.safeParse(chunk);
      assert.ok(parsed.success, JSON.stringify(chunk));
      assert.deepEqual(parsed.data, chunk);
    }
    const completion = strip({
      id: 'c',
      choices: choices(random, 'message'),
      usage: pick(usages, random),
    });
    if (isPlainCompletion(completion)) {
      plain_completions++;
      const parsed = upstreamCompletionSchema.safeParse(completion);
      assert.ok(parsed.success, JSON.stringify(completion));
      assert.deepEqual(parsed.data, completion);
    }
  }
  // The check is not vacuous: the common shapes take the fast path.
  assert.ok(plain_chunks > 1_000, `${plain_chunks} plain chunks`);
  assert.ok(plain_completions > 50, `${plain_completions} plain completions`);
});

test('upstream shapes: typical chunks and completions take the fast path; broken ones go to the schema', () => {
  assert.ok(
    isPlainChunk({
      id: 'x',
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
    }),
  );
  assert.ok(
    isPlainChunk({
      id: 'x',
      choices: [],
      usage: { prompt_tokens: 8, completion_tokens: 15, total_tokens: 23 },
    }),
  );
  assert.ok(
    isPlainCompletion({
      choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1, completion_tokens: 1 },
    }),
  );
  assert.ok(!isPlainCompletion({ choices: [] }), 'a completion needs a choice');
  assert.ok(
    !isPlainCompletion({ choices: [{ index: 0, finish_reason: 'stop' }] }),
    'a choice needs a message',
  );
  assert.ok(!isPlainChunk({ choices: [{ delta: { content: 5 } }] }));
  // A malformed usage is not refused: the schema turns it into null, so it is not "unchanged".
  assert.ok(!isPlainChunk({ choices: [], usage: { prompt_tokens: -1, completion_tokens: 2 } }));
  assert.equal(
    upstreamChunkSchema.parse({ choices: [], usage: { prompt_tokens: -1, completion_tokens: 2 } })
      .usage,
    null,
  );
});
