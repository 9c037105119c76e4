import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readSse, SseFormatError } from '../../../gateway/llm/sse-reader.js';

async function events(parts: (string | Buffer)[], limit?: number) {
  const out: { event: string | null; data: string }[] = [];
  async function* body() {
    for (const part of parts) yield part;
  }
  for await (const e of readSse(body(), limit)) out.push(e);
  return out;
}

test('sse reader: events split anywhere, LF or CRLF, multi-line data, comments and other fields skipped', async () => {
  const text =
    ': keep-alive\r\ndata: {"a":1}\r\n\r\nevent: error\ndata: line one\ndata:line two\nid: 7\n\ndata: [DONE]\n\n';
  const whole = await events([text]);
  assert.deepEqual(whole, [
    { event: null, data: '{"a":1}' },
    { event: 'error', data: 'line one\nline two' },
    { event: null, data: '[DONE]' },
  ]);
  for (let cut = 1; cut < text.length; cut++)
    assert.deepEqual(await events([text.slice(0, cut), text.slice(cut)]), whole, `cut at ${cut}`);
});

test('sse reader: a character split across two buffers is decoded whole; the last event needs no blank line', async () => {
  const bytes = Buffer.from('data: नमस्ते 😀\n\ndata: tail');
  for (let cut = 1; cut < bytes.length; cut++) {
    assert.deepEqual(await events([bytes.subarray(0, cut), bytes.subarray(cut)]), [
      { event: null, data: 'नमस्ते 😀' },
      { event: null, data: 'tail' },
    ]);
  }
});

test('sse reader: an event or line beyond the bound is refused instead of buffered', async () => {
  await assert.rejects(
    events([`data: ${'x'.repeat(100)}\n`, `data: ${'y'.repeat(100)}\n\n`], 150),
    SseFormatError,
  );
  await assert.rejects(events([`data: ${'z'.repeat(500)}`], 150), SseFormatError);
});
