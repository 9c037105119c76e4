// Encryption at rest (issue #13, "Encrypted transactions"): webhook secrets and eKYC documents
// are sealed with AES-256-GCM under a key from AIHUB_ENCRYPTION_KEY or generated 0600 in the
// data dir; `aihub-gateway rotate-key` re-seals everything; data from before encryption opens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  admin,
  filesUnder,
  request,
  runCli,
  runVerify,
  storeArgs,
  tempDir,
  testDatabaseFor,
  TEST_CLUSTER_URL,
} from './helpers.ts';
import {
  PDF,
  download,
  onboard,
  paymentsConfig,
  registerWithWebhookAndKyc,
  startPaymentsGateway,
} from '../support/payments-helpers.ts';
import { PAYMENT_HISTORY_TAGS } from '../../gateway/payments/history-tags.ts';

function assertNoPlaintext(data_dir: string, secret: string): void {
  for (const file of filesUnder(data_dir)) {
    const bytes = readFileSync(file);
    assert.ok(!bytes.includes(Buffer.from(secret)), `${file} holds the webhook secret`);
    assert.ok(
      !bytes.includes(Buffer.from('PAN of Asha Verma')),
      `${file} holds the document's text`,
    );
  }
}

/** In a PostgreSQL run, how many log records and rows hold this text (0 in a JSON-file run). */
async function inDatabase(data_dir: string, text: string): Promise<number> {
  const url = await testDatabaseFor(data_dir);
  if (!url) return 0;
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result = await client.query<{ n: string }>(
      `SELECT (SELECT count(*) FROM aihub.rows WHERE strpos(row::text, $1) > 0)
            + (SELECT count(*) FROM aihub.history WHERE strpos(record::text, $1) > 0)
            + (SELECT count(*) FROM aihub.postings WHERE strpos(posting::text, $1) > 0) AS n`,
      [text],
    );
    return Number(result.rows[0]!.n);
  } finally {
    await client.end();
  }
}

test('a generated key (0600) seals webhook secrets and eKYC documents; rotate-key re-seals them and they still work', async () => {
  const data_dir = tempDir();
  const env = { AIHUB_ENCRYPTION_KEY: '' };
  let gw = await startPaymentsGateway(paymentsConfig(), { data_dir, env });
  let ids;
  try {
    ids = await registerWithWebhookAndKyc(gw);
    assert.ok((await download(gw, ids.account_id, ids.document_id)).equals(PDF));
  } finally {
    await gw.stop();
  }
  const key_file = join(data_dir, 'encryption.key');
  assert.equal(statSync(key_file).mode & 0o777, 0o600);
  const first_key = readFileSync(key_file, 'utf8');
  assert.match(first_key, /^[0-9a-f]{64}$/m);
  assertNoPlaintext(data_dir, ids.secret);
  const document_file = filesUnder(join(data_dir, 'kyc-documents'))[0]!;
  const sealed_before = readFileSync(document_file);

  const rotated = await runCli(['rotate-key', ...(await storeArgs(data_dir))], env);
  assert.equal(rotated.code, 0, rotated.stderr);
  const report = JSON.parse(rotated.stdout);
  assert.equal(report.accounts_resealed, 1);
  assert.equal(report.documents_resealed, 1);
  if (TEST_CLUSTER_URL) assert.equal(report.documents_elsewhere, 0);
  assert.equal(await inDatabase(data_dir, ids.secret), 0, 'the database holds no plaintext secret');
  const second_key = readFileSync(key_file, 'utf8');
  assert.notEqual(second_key, first_key);
  assert.equal(
    second_key.match(/^[0-9a-f]{64}$/gm)!.length,
    1,
    'the old key is dropped once everything is re-sealed',
  );
  assert.ok(!readFileSync(document_file).equals(sealed_before));
  assertNoPlaintext(data_dir, ids.secret);
  assert.equal((await runVerify(data_dir)).code, 0);

  gw = await startPaymentsGateway(paymentsConfig(), { data_dir, env });
  try {
    assert.ok(
      (await download(gw, ids.account_id, ids.document_id)).equals(PDF),
      'the document opens under the new key',
    );
    const hook = await request(`${gw.url}/api/webhook`, { headers: ids.headers });
    assert.equal(
      hook.body.data.secret_hint,
      `${ids.secret.slice(0, 10)}…`,
      'the webhook secret opens under the new key',
    );
    // The Aadhaar fingerprint was turned into the new key's: the same number on a new
    // account is still flagged as the old account's (the old key is gone).
    const { account_id } = await onboard(gw, 0);
    const flagged = await admin(gw).get(`/admin/kyc/${account_id}`);
    assert.deepEqual(flagged.body.duplicates.aadhaar.accounts, [
      { account_id: ids.account_id, status: 'submitted' },
    ]);
  } finally {
    await gw.stop();
  }
});

test('AIHUB_ENCRYPTION_KEY: a wrong key stops the start naming the key; with the old key named, the start re-seals; rotate-key with env keys', async () => {
  const data_dir = tempDir();
  const key_1 = randomBytes(32).toString('hex');
  const key_2 = randomBytes(32).toString('hex');
  let gw = await startPaymentsGateway(paymentsConfig(), {
    data_dir,
    env: { AIHUB_ENCRYPTION_KEY: key_1 },
  });
  let ids;
  try {
    ids = await registerWithWebhookAndKyc(gw);
  } finally {
    await gw.stop();
  }
  assert.deepEqual(
    readdirSync(data_dir).filter((name) => name.startsWith('encryption')),
    [],
    'no key file when the key comes from the environment',
  );

  const config_file = join(tempDir(), 'config.json');
  const { writeFileSync } = await import('node:fs');
  writeFileSync(config_file, JSON.stringify(paymentsConfig()));
  const wrong = await runCli(
    ['--port', '0', ...(await storeArgs(data_dir)), '--config', config_file],
    {
      AIHUB_ENCRYPTION_KEY: key_2,
      AIHUB_ADMIN_TOKEN: gw.admin_token,
    },
  );
  assert.equal(wrong.code, 2, wrong.stderr);
  assert.match(wrong.stderr, /AIHUB_ENCRYPTION_OLD_KEYS/);
  const malformed = await runCli(['--port', '0', ...(await storeArgs(data_dir))], {
    AIHUB_ENCRYPTION_KEY: 'not-a-key',
    AIHUB_ADMIN_TOKEN: gw.admin_token,
  });
  assert.equal(malformed.code, 2, malformed.stderr);
  assert.match(malformed.stderr, /AIHUB_ENCRYPTION_KEY: an encryption key is 32 bytes/);

  // The new key with the old one named: the start re-seals the secret; documents open with either key until rotate-key.
  gw = await startPaymentsGateway(paymentsConfig(), {
    data_dir,
    env: { AIHUB_ENCRYPTION_KEY: key_2, AIHUB_ENCRYPTION_OLD_KEYS: key_1 },
  });
  try {
    assert.ok((await download(gw, ids.account_id, ids.document_id)).equals(PDF));
  } finally {
    await gw.stop();
  }
  const rotated = await runCli(['rotate-key', ...(await storeArgs(data_dir))], {
    AIHUB_ENCRYPTION_KEY: key_2,
    AIHUB_ENCRYPTION_OLD_KEYS: key_1,
  });
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.deepEqual(
    {
      accounts: JSON.parse(rotated.stdout).accounts_resealed,
      documents: JSON.parse(rotated.stdout).documents_resealed,
    },
    { accounts: 0, documents: 1 },
    'the start had re-sealed the secret already',
  );
  // Now key_2 alone opens everything.
  gw = await startPaymentsGateway(paymentsConfig(), {
    data_dir,
    env: { AIHUB_ENCRYPTION_KEY: key_2 },
  });
  try {
    assert.ok((await download(gw, ids.account_id, ids.document_id)).equals(PDF));
    assert.equal(
      (await request(`${gw.url}/api/webhook`, { headers: ids.headers })).body.data.secret_hint,
      `${ids.secret.slice(0, 10)}…`,
    );
    assert.equal((await admin(gw).get(`/admin/kyc/${ids.account_id}`)).status, 200);
  } finally {
    await gw.stop();
  }
});

test(
  'a data dir from before encryption: its plaintext webhook secret is sealed on start, its plaintext documents open and rotate-key seals them',
  {
    skip: TEST_CLUSTER_URL
      ? 'a JSON-file data dir from before encryption; PostgreSQL stores start encrypted'
      : false,
  },
  async () => {
    const { Store } = await import('../../gateway/store/store.ts');
    const { createAccount, createApiKey } = await import('../../gateway/accounts/accounts.ts');
    const { createHash } = await import('node:crypto');
    const { mkdirSync, writeFileSync } = await import('node:fs');
    const data_dir = tempDir();
    const legacy_secret = `whsec_${randomBytes(24).toString('hex')}`;
    const store = await Store.open(data_dir, { history_tags: PAYMENT_HISTORY_TAGS });
    const path = join('kyc-documents', 'legacy', 'doc_legacy.pdf');
    const keys = store.indexBy('keys', 'account_id');
    const { account_id, key } = await store.transact((tx) => {
      const account = createAccount(tx, { email: 'legacy@example.com' });
      tx.set('accounts', account.id, {
        ...account,
        webhook: { url: 'http://127.0.0.1:9/hook', secret: legacy_secret },
      });
      return { account_id: account.id, key: createApiKey(tx, keys, account.id, 'legacy').key };
    });
    mkdirSync(join(data_dir, 'kyc-documents', 'legacy'), { recursive: true, mode: 0o700 });
    writeFileSync(join(data_dir, path), PDF, { mode: 0o600 });
    await store.transact((tx) => {
      tx.set('kyc_submissions', account_id, {
        account_id,
        name: 'Asha Verma',
        aadhaar_masked: 'XXXX-XXXX-2346',
        pan_number: 'AAPFU0939F',
        gstin: null,
        documents: [
          {
            id: 'doc_legacy',
            kind: 'pan',
            filename: 'pan.pdf',
            content_type: 'application/pdf',
            size_bytes: PDF.length,
            sha256: createHash('sha256').update(PDF).digest('hex'),
            path,
          },
        ],
        status: 'submitted',
        reason: null,
        submitted_at: new Date().toISOString(),
        reviewed_at: null,
        submissions: 1,
      });
      tx.set('accounts', account_id, {
        ...tx.get('accounts', account_id)!,
        kyc_status: 'submitted',
      });
    });
    await store.close();
    assert.ok(
      readFileSync(join(data_dir, 'state.jsonl'), 'utf8').includes(legacy_secret),
      'the set-up really is plaintext',
    );

    let gw = await startPaymentsGateway(paymentsConfig(), {
      data_dir,
      env: { AIHUB_ENCRYPTION_KEY: '' },
    });
    try {
      assert.equal(
        (await request(`${gw.url}/api/webhook`, { headers: { 'x-api-key': key } })).body.data
          .secret_hint,
        `${legacy_secret.slice(0, 10)}…`,
      );
      assert.ok(
        (await download(gw, account_id, 'doc_legacy')).equals(PDF),
        'a plaintext document still opens',
      );
    } finally {
      await gw.stop();
    }
    assert.ok(
      !readFileSync(join(data_dir, 'state.jsonl'), 'utf8').includes(legacy_secret),
      'the checkpoint holds the secret sealed',
    );
    assert.ok(
      readFileSync(join(data_dir, path)).equals(PDF),
      "documents are sealed by rotate-key, not behind the operator's back",
    );

    const rotated = await runCli(['rotate-key', ...(await storeArgs(data_dir))], {
      AIHUB_ENCRYPTION_KEY: '',
    });
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.equal(JSON.parse(rotated.stdout).documents_resealed, 1);
    assert.ok(!readFileSync(join(data_dir, path)).includes(Buffer.from('PAN of Asha Verma')));
    gw = await startPaymentsGateway(paymentsConfig(), {
      data_dir,
      env: { AIHUB_ENCRYPTION_KEY: '' },
    });
    try {
      assert.ok((await download(gw, account_id, 'doc_legacy')).equals(PDF));
    } finally {
      await gw.stop();
    }
  },
);
