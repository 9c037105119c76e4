// A target's native protocols are the ones whose folders give a dialect (issue #38: a
// protocol is a module, so the engine's config no longer lists them by name): a name no
// protocol answers to is refused when the config is read, with the field and the choices.
// And a dialect, read through chat/native.ts's relay, as the pass-through step reads it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { configSchema } from '../../../gateway/config.ts';
import { NATIVE_PROTOCOLS } from '../../../gateway/chat/protocols/index.ts';
import { completionsNative } from '../../../gateway/chat/protocols/completions/native.ts';
import { NativeStream } from '../../../gateway/chat/native.ts';

const withProtocols = (protocols: string[]) => ({
  chat: {
    engines: {
      up: {
        type: 'openai-compatible',
        base_url: 'https://api.example.test/v1',
        model: 'm',
        protocols,
        native_base_urls: { gemini: 'https://api.example.test/v1beta' },
      },
    },
  },
});

test('every protocol with a native dialect is accepted on a target; another name is refused naming the field', () => {
  assert.deepEqual([...NATIVE_PROTOCOLS].sort(), [
    'completions',
    'gemini',
    'messages',
    'responses',
  ]);
  assert.ok(configSchema.safeParse(withProtocols([...NATIVE_PROTOCOLS])).success);
  const refused = configSchema.safeParse(withProtocols(['responses', 'embeddings']));
  assert.equal(refused.success, false);
  const issue = refused.error!.issues[0]!;
  assert.deepEqual(issue.path, ['chat', 'engines', 'up', 'protocols', 1]);
  assert.match(issue.message, /"embeddings" is no protocol a target can speak natively/);
});

test("a protocol's own base URL must share the target's origin (one pool per target)", () => {
  const config = withProtocols(['gemini']);
  config.chat.engines.up.native_base_urls = { gemini: 'https://elsewhere.test/v1beta' };
  const refused = configSchema.safeParse(config);
  assert.equal(refused.success, false);
  assert.deepEqual(refused.error!.issues[0]!.path, [
    'chat',
    'engines',
    'up',
    'native_base_urls',
    'gemini',
  ]);
});

test("a native completions stream: the tier id as each chunk's model, the last chunk held back for the bill, usage read from it; its requests go beside chat with the target's model", () => {
  const stream = new NativeStream(completionsNative, 'service-ai-lite');
  const chunk = (data: Record<string, unknown>) => ({ event: null, data: JSON.stringify(data) });
  const first = stream.push(chunk({ model: 'up', choices: [{ text: 'Hel' }] }));
  assert.deepEqual(first, [], 'any chunk may be the last: one is held back');
  const second = stream.push(
    chunk({
      model: 'up',
      choices: [{ text: 'lo' }],
      usage: {
        prompt_tokens: 7,
        completion_tokens: 2,
        prompt_tokens_details: { cached_tokens: 9 },
      },
    }),
  );
  assert.deepEqual(second, [{ data: { model: 'service-ai-lite', choices: [{ text: 'Hel' }] } }]);
  assert.deepEqual(stream.push({ event: null, data: '[DONE]' }), []);
  assert.deepEqual(stream.billed(100), {
    prompt_tokens: 7,
    completion_tokens: 2,
    cached_tokens: 7,
    reasoning_tokens: 0,
  });
  const x_aihub = { request_id: 'r', cost: 1, balance: 2 };
  const last = stream.finish(x_aihub);
  assert.equal(last.length, 1);
  assert.deepEqual((last[0]!.data as Record<string, unknown>).x_aihub, x_aihub);
  assert.equal((last[0]!.data as Record<string, unknown>).model, 'service-ai-lite');
  assert.equal(completionsNative.done_marker, true);

  const address = completionsNative.address(
    { base_url: 'https://u.test/v1', own_base_url: undefined, model: 'up-model', api_key: 'k' },
    { prompt: 'x', max_tokens: 5 },
    true,
  );
  assert.deepEqual(address, {
    path: '/completions',
    body: { prompt: 'x', max_tokens: 5, model: 'up-model' },
    headers: {},
  });
});

test('a native stream with no usage is billed on the prompt estimate and the text it streamed', () => {
  const stream = new NativeStream(completionsNative, 't');
  stream.push({ event: null, data: JSON.stringify({ choices: [{ text: 'hello world' }] }) });
  const billed = stream.billed(11);
  assert.equal(billed.prompt_tokens, 11);
  assert.equal(billed.estimated, true);
  assert.ok(billed.completion_tokens > 0);
});
