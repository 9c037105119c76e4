// Issue #25, item 1: a default deployment must not mint money. With a real upstream
// configured (an openai-compatible engine, as docs/deploy.md's OPENAI_API_KEY set-up has) and
// no mode set, the gateway starts live: a dashboard user cannot top up sandbox money to spend
// on the operator's paid model. Sandbox money stays where nothing real can be reached (the
// embedded default) or where the operator asks for it (`mode: sandbox`). The start log says
// the mode and why, and the dashboard's footer shows it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DashboardClient } from '../support/dashboard-client.ts';
import { startGateway, tempDir, waitForOutput, type Gateway } from './helpers.ts';

/** A config with a real (never called) upstream engine behind the paid tiers, as an operator's. */
function upstreamConfig(extra: Record<string, unknown> = {}): string {
  const file = join(tempDir('aihub-mode-config-'), 'config.json');
  writeFileSync(
    file,
    JSON.stringify({
      chat: {
        engines: {
          openai: {
            type: 'openai-compatible',
            base_url: 'https://api.openai.com/v1',
            api_key_env: 'OPENAI_API_KEY',
            model: 'gpt-4o-mini',
          },
        },
        models: { 'service-ai-pro-4': { targets: ['openai'] } },
      },
      ...extra,
    }),
  );
  return file;
}

/** Signs up on the dashboard and tries a sandbox top-up of 1,00,000; the top-up's status and the wallet page. */
async function tryTopUp(gateway: Gateway, email: string) {
  const browser = new DashboardClient(gateway.url);
  const signed = await browser.signup(email, 'a long enough passphrase');
  assert.equal(signed.status, 303, signed.text.slice(0, 300));
  const wallet = await browser.get('/wallet');
  assert.equal(wallet.status, 200);
  const nonce = /name="nonce" value="([^"]+)"/.exec(wallet.text)?.[1] ?? 'n'.repeat(22);
  const topped = await browser.post(
    '/wallet/top-up',
    { amount: '100000', nonce },
    { page: '/wallet' },
  );
  const after = await browser.get('/wallet');
  return { status: topped.status, wallet: after.text };
}

const footer = (page: string) => /<footer class="foot"[^>]*>([^<]*)<\/footer>/.exec(page)?.[1];

test('item 1: an upstream configured and no mode set: the gateway starts live, no sandbox top-up, the footer and the log say live', async () => {
  const gateway = await startGateway({
    args: ['--config', upstreamConfig()],
    env: { OPENAI_API_KEY: 'sk-not-used' },
  });
  try {
    const line = await waitForOutput(gateway, (l) => l.includes('"msg":"listening"'), 'listening');
    assert.equal(JSON.parse(line).mode, 'live', line);
    assert.equal(JSON.parse(line).mode_source, 'derived', line);
    const why = await waitForOutput(gateway, (l) => l.includes('"msg":"live mode"'), 'the mode');
    assert.match(JSON.parse(why).why, /chat engine openai/);
    const { status, wallet } = await tryTopUp(gateway, 'mallory@example.com');
    assert.equal(status, 403, 'no sandbox top-up on a gateway with a real upstream');
    assert.match(wallet, /₹0\.00|0\.00/, 'the wallet stays empty');
    assert.match(footer(wallet) ?? '', /^Live mode/);
  } finally {
    await gateway.stop();
  }
});

test('item 1: the embedded default (nothing real configured) stays sandbox; an explicit mode: sandbox keeps sandbox beside an upstream', async () => {
  const plain = await startGateway();
  try {
    const line = await waitForOutput(plain, (l) => l.includes('"msg":"listening"'), 'listening');
    assert.equal(JSON.parse(line).mode, 'sandbox');
    const { status, wallet } = await tryTopUp(plain, 'dev@example.com');
    assert.equal(status, 303, 'sandbox top-up on the embedded default');
    assert.match(footer(wallet) ?? '', /^Sandbox mode/);
  } finally {
    await plain.stop();
  }
  for (const how of ['config', 'env'] as const) {
    const gateway = await startGateway({
      args: ['--config', upstreamConfig(how === 'config' ? { mode: 'sandbox' } : {})],
      env: { OPENAI_API_KEY: 'sk-not-used', ...(how === 'env' ? { AIHUB_MODE: 'sandbox' } : {}) },
    });
    try {
      const line = await waitForOutput(
        gateway,
        (l) => l.includes('"msg":"listening"'),
        'listening',
      );
      assert.equal(JSON.parse(line).mode, 'sandbox', how);
      assert.equal(JSON.parse(line).mode_source, how);
      const { status } = await tryTopUp(gateway, `tester-${how}@example.com`);
      assert.equal(status, 303, `the operator asked for sandbox (${how})`);
    } finally {
      await gateway.stop();
    }
  }
});
