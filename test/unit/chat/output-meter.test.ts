// When the gateway stops an upstream that ignores the output limit, and what it bills: pure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  capOutput,
  OutputMeter,
  trimCompletion,
  withMargin,
} from '../../../gateway/chat/steps/output-meter.ts';
import { countTextTokens } from '../../../gateway/llm/tokens.ts';
import type { UpstreamChunk, UpstreamCompletion } from '../../../gateway/llm/types.ts';

const piece = (content: string) =>
  ({ choices: [{ index: 0, delta: { content }, finish_reason: null }] }) as UpstreamChunk;

/** Feeds pieces until the meter says stop; how many it took. */
function feed(meter: OutputMeter, text: string, most = 100_000): number {
  for (let n = 1; n <= most; n++) if (meter.observe(piece(text))) return n;
  return -1;
}

test('a token-by-token runaway is stopped just past the limit and its margin', () => {
  assert.equal(withMargin(50), 66);
  assert.equal(withMargin(1000), 1100);
  assert.equal(feed(new OutputMeter(50), ' word'), 67);
  assert.equal(feed(new OutputMeter(1000), ' word'), 1101);
});

test('a runaway in large pieces is stopped at 24 bytes per token of the limit', () => {
  const meter = new OutputMeter(50);
  const pieces = feed(meter, ' word'.repeat(40)); // 200 bytes a piece
  assert.ok(meter.stopped);
  assert.ok(pieces * 200 > 24 * 50 + 256 && (pieces - 1) * 200 <= 24 * 50 + 256, String(pieces));
});

test('an honest upstream whose text the gateway counts as more tokens is not stopped', () => {
  // Hindi: cl100k counts 7 tokens where a larger vocabulary may count one.
  const meter = new OutputMeter(100);
  const hindi = ' नमस्ते';
  assert.equal(countTextTokens(hindi), 7);
  assert.equal(feed(meter, hindi, 100), -1, '100 pieces for a limit of 100');
  assert.ok(!meter.stopped);
  assert.equal(meter.tokens(), 700, 'billed on its count, capped at the limit by capOutput');
});

test('a stopped stream ends every choice it saw with length', () => {
  const meter = new OutputMeter(10);
  meter.observe({
    choices: [{ index: 1, delta: { content: 'x' }, finish_reason: null }],
  } as UpstreamChunk);
  assert.deepEqual(meter.lengthChunk(), {
    choices: [{ index: 1, delta: {}, finish_reason: 'length' }],
  });
});

test('the bill never covers more output than the hold', () => {
  const usage = { prompt_tokens: 20, completion_tokens: 17_409, reasoning_tokens: 20_000 };
  assert.deepEqual(capOutput(usage, 50), {
    usage: { prompt_tokens: 20, completion_tokens: 50, reasoning_tokens: 50 },
    capped: true,
  });
  const within = { prompt_tokens: 20, completion_tokens: 50 };
  assert.equal(capOutput(within, 50).usage, within);
});

test('a JSON answer is cut only when its usage (or, without usage, a large estimate) says the limit was ignored', () => {
  const completion = (content: string, completion_tokens?: number) =>
    ({
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      ...(completion_tokens !== undefined
        ? { usage: { prompt_tokens: 5, completion_tokens } }
        : {}),
    }) as UpstreamCompletion;
  const long = ' word'.repeat(1000);
  const reported = completion(long, 1000);
  assert.ok(trimCompletion(reported, 50));
  assert.ok(countTextTokens(reported.choices[0]!.message.content!) <= 50);
  assert.equal(reported.choices[0]!.finish_reason, 'length');
  const honest = completion(long, 60); // within the margin by the upstream's own count
  assert.ok(!trimCompletion(honest, 50));
  const silent = completion(long); // 5,000 bytes
  assert.ok(!trimCompletion(silent, 200), 'under 24 × 200 + 256 bytes');
  assert.ok(trimCompletion(silent, 100));
});
