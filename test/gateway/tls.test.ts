// HTTPS on the gateway's own port (issue #13, "Encrypted transactions"): tls.cert_file and
// tls.key_file make it serve TLS; SIGHUP loads a new certificate without dropping the listener.
// Certificates are self-signed, made here with the openssl CLI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:tls';
import OpenAI from 'openai';
import { Agent, fetch as undiciFetch } from 'undici';
import { runCli, startGateway, tempDir } from './helpers.ts';

function makeCertificate(
  dir: string,
  name: string,
): { cert_file: string; key_file: string; pem: string } {
  const cert_file = join(dir, `${name}.crt`);
  const key_file = join(dir, `${name}.key`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      key_file,
      '-out',
      cert_file,
    ],
    { stdio: 'ignore' },
  );
  return { cert_file, key_file, pem: readFileSync(cert_file, 'utf8') };
}

/** The subject CN of the certificate the server presents on a new connection. */
function servedName(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const cn = socket.getPeerCertificate().subject?.CN;
      socket.end();
      resolve(String(cn));
    });
    socket.once('error', reject);
  });
}

/** Waits (on state, bounded) until new connections get the certificate named `name`. */
async function waitForServedName(port: number, name: string): Promise<void> {
  for (let waited = 0; (await servedName(port)) !== name; waited++) {
    assert.ok(waited < 200, `the certificate ${name} is served after SIGHUP`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function trusting(pem: string) {
  const dispatcher = new Agent({ connect: { ca: pem } });
  const fetch = ((url: string, init?: object) =>
    undiciFetch(url, { ...init, dispatcher } as never)) as unknown as typeof globalThis.fetch;
  return { dispatcher, fetch };
}

test('TLS: the gateway serves HTTPS to the openai SDK, and SIGHUP swaps the certificate on the same listener', async () => {
  const dir = tempDir();
  const first = makeCertificate(dir, 'aihub-first');
  const live = { cert_file: join(dir, 'live.crt'), key_file: join(dir, 'live.key') };
  writeFileSync(live.cert_file, readFileSync(first.cert_file));
  writeFileSync(live.key_file, readFileSync(first.key_file));
  const gateway = await startGateway({
    env: { AIHUB_TLS_CERT_FILE: live.cert_file, AIHUB_TLS_KEY_FILE: live.key_file },
  });
  const base = `https://127.0.0.1:${gateway.port}`;
  const pid = gateway.proc.pid;
  try {
    let client = trusting(first.pem);
    const admin = async (path: string, body: unknown) => {
      const response = await client.fetch(`${base}${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${gateway.admin_token}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as any };
    };
    const account = await admin('/admin/accounts', { email: 'tls@example.com' });
    assert.equal(account.status, 201);
    assert.equal(
      (await admin(`/admin/accounts/${account.body.id}/credit`, { amount: 10, reference: 'tls-1' }))
        .status,
      200,
    );
    const key = (await admin(`/admin/accounts/${account.body.id}/keys`, {})).body.key as string;

    const sdk = (fetch: typeof globalThis.fetch) =>
      new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0, fetch });
    const reply = await sdk(client.fetch).chat.completions.create({
      model: 'service-ai-lite',
      messages: [{ role: 'user', content: 'hello over TLS' }],
    });
    assert.ok(reply.choices[0]!.message.content!.length > 0);
    assert.ok((reply as any).x_aihub.cost >= 0);
    assert.equal(await servedName(gateway.port), 'aihub-first');

    // Without trusting the certificate, a client refuses the connection: it really is TLS.
    await assert.rejects(sdk(globalThis.fetch).models.list());

    // Renew: new files in place, SIGHUP, and new connections get the new certificate.
    const second = makeCertificate(dir, 'aihub-second');
    writeFileSync(live.cert_file, readFileSync(second.cert_file));
    writeFileSync(live.key_file, readFileSync(second.key_file));
    gateway.proc.kill('SIGHUP');
    await waitForServedName(gateway.port, 'aihub-second');
    await client.dispatcher.close();
    client = trusting(second.pem);
    const after = await sdk(client.fetch).chat.completions.create({
      model: 'service-ai-lite',
      messages: [{ role: 'user', content: 'and after the reload' }],
    });
    assert.ok(after.choices[0]!.message.content!.length > 0);

    // A broken renewal is refused and the process keeps serving; a good one after it still loads.
    writeFileSync(live.cert_file, 'not a certificate');
    gateway.proc.kill('SIGHUP');
    const third = makeCertificate(dir, 'aihub-third');
    writeFileSync(live.cert_file, readFileSync(third.cert_file));
    writeFileSync(live.key_file, readFileSync(third.key_file));
    gateway.proc.kill('SIGHUP');
    await waitForServedName(gateway.port, 'aihub-third');
    assert.equal(gateway.proc.pid, pid);
    assert.equal(gateway.proc.exitCode, null, 'still running');
    await client.dispatcher.close();
  } finally {
    assert.equal(await gateway.stop(), 0);
  }
});

test('TLS: a missing file, a key that does not match, or a certificate without a key stop the start with exit 2', async () => {
  const dir = tempDir();
  const a = makeCertificate(dir, 'a');
  const b = makeCertificate(dir, 'b');
  const mismatch = await runCli(['--port', '0', '--data-dir', tempDir()], {
    AIHUB_TLS_CERT_FILE: a.cert_file,
    AIHUB_TLS_KEY_FILE: b.key_file,
  });
  assert.equal(mismatch.code, 2, mismatch.stderr);
  assert.match(mismatch.stderr, /do not make a certificate and its key/);
  const missing = await runCli(['--port', '0', '--data-dir', tempDir()], {
    AIHUB_TLS_CERT_FILE: join(dir, 'nope.crt'),
    AIHUB_TLS_KEY_FILE: a.key_file,
  });
  assert.equal(missing.code, 2, missing.stderr);
  assert.match(missing.stderr, /nope\.crt/);
  const alone = await runCli(['--port', '0', '--data-dir', tempDir()], {
    AIHUB_TLS_CERT_FILE: a.cert_file,
  });
  assert.equal(alone.code, 2, alone.stderr);
  assert.match(alone.stderr, /tls: cert_file and key_file go together/);
});
