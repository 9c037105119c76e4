// A real gateway for the extension-host tests: dist/gateway.js (or the script named by AIHUB_TEST_GATEWAY) started
// with VS Code's runtime on a free port with a temp data dir, plus the admin calls the tests need.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestGateway {
  root: string;
  apiBase: string;
  /** Creates an account, optionally credited, and returns one of its keys. */
  account(credit: number): Promise<{ accountId: string; key: string; keyId: string }>;
  revokeKey(keyId: string): Promise<void>;
  stop(): Promise<void>;
}

/** The tier the tests answer from a scripted upstream (see startTestGateway's `scripted`). */
export const SCRIPTED_MODEL = 'service-ai-pro-4';

/**
 * `scripted`: the base URL of a scripted OpenAI-compatible upstream (test/support/scripted-upstream.ts)
 * that answers SCRIPTED_MODEL, so a test can say what the model replies and read what reached it.
 */
export async function startTestGateway(
  repo: string,
  options: { scripted?: string } = {},
): Promise<TestGateway> {
  const script = process.env.AIHUB_TEST_GATEWAY ?? join(repo, 'dist/gateway.js');
  const dataDir = mkdtempSync(join(tmpdir(), 'aihub-test-gateway-'));
  const adminToken = randomBytes(24).toString('hex');
  // The built-in engine paces its tokens a little, so a reply really arrives over time and the
  // tests that watch it stream do not depend on how the event loops happen to interleave.
  const configFile = join(dataDir, 'test-config.json');
  const engines: Record<string, unknown> = { builtin: { type: 'builtin', token_interval_ms: 3 } };
  const models: Record<string, unknown> = {};
  if (options.scripted) {
    engines.scripted = {
      type: 'openai-compatible',
      base_url: options.scripted,
      model: 'scripted-model',
      timeout_ms: 10_000,
    };
    // The scripted tier says its models read images (the language model provider's image test).
    models[SCRIPTED_MODEL] = { targets: ['scripted'], input_modalities: ['text', 'image'] };
  }
  writeFileSync(configFile, JSON.stringify({ chat: { engines, models } }), { mode: 0o600 }); // the data dir must stay private
  const child: ChildProcess = spawn(
    process.execPath,
    [script, '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--config', configFile],
    {
      env: {
        ...process.env,
        ELECTRON_RUN_AS_NODE: '1',
        AIHUB_ADMIN_TOKEN: adminToken,
        AIHUB_MODE: 'sandbox',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`gateway did not start in 30 s:\n${output}`)),
      30_000,
    );
    const onData = (data: Buffer): void => {
      output += data.toString();
      for (const line of output.split('\n')) {
        if (!line.includes('"msg":"listening"')) continue;
        clearTimeout(timer);
        resolve((JSON.parse(line) as { port: number }).port);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    child.once('exit', (code) => reject(new Error(`gateway exited (${code}):\n${output}`)));
  });
  const root = `http://127.0.0.1:${port}`;

  const admin = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${root}${path}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path} → ${response.status} ${text}`);
    return (text ? JSON.parse(text) : undefined) as T;
  };

  return {
    root,
    apiBase: `${root}/v1`,
    async account(credit) {
      const account = await admin<{ id: string }>('POST', '/admin/accounts', {
        email: `test-${randomBytes(4).toString('hex')}@example.com`,
      });
      const key = await admin<{ id: string; key: string }>(
        'POST',
        `/admin/accounts/${account.id}/keys`,
        { name: 'test' },
      );
      if (credit > 0)
        await admin('POST', `/admin/accounts/${account.id}/credit`, {
          amount: credit,
          reference: `test-${account.id}`,
        });
      return { accountId: account.id, key: key.key, keyId: key.id };
    },
    async revokeKey(keyId) {
      await admin('DELETE', `/admin/keys/${keyId}`);
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
