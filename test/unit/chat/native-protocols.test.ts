// A target's native protocols are the ones whose folders give a dialect (issue #38: a
// protocol is a module, so the engine's config no longer lists them by name): a name no
// protocol answers to is refused when the config is read, with the field and the choices.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { configSchema } from '../../../gateway/config.ts';
import { NATIVE_PROTOCOLS } from '../../../gateway/chat/protocols/index.ts';

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
