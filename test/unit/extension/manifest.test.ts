import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { configSchema } from '../../../gateway/config.js';

const manifest = JSON.parse(
  readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'),
) as {
  contributes: { configuration: { properties: Record<string, { default?: unknown }> } };
};
const setting = (name: string) => manifest.contributes.configuration.properties[name];

test('manifest: the bundled gateway defaults to another port than a standalone gateway, and settings.ts agrees', () => {
  const standalone = configSchema.parse({}).port;
  const bundled = setting('aihub.localGateway.port')?.default;
  assert.equal(typeof bundled, 'number');
  assert.notEqual(
    bundled,
    standalone,
    'a developer running `npm start` would see the extension fail to start its own gateway',
  );
  // settings.ts imports vscode, so read its default from the source.
  const source = readFileSync(new URL('../../../extension/settings.ts', import.meta.url), 'utf8');
  assert.match(source, new RegExp(`DEFAULT_LOCAL_GATEWAY_PORT = ${bundled};`));
});

test('manifest: the default of aihub.codebase.exclude is the one settings.ts falls back to', async () => {
  const { DEFAULT_EXCLUDES } = await import('../../../extension/codebase/exclude.js');
  assert.deepEqual(setting('aihub.codebase.exclude')?.default, DEFAULT_EXCLUDES);
});
