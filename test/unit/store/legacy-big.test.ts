// A checkpoint of version 1 (`state.json`) bigger than V8's largest string (512 MB) migrates:
// it is read as a stream (stream-json), its finalized transactions are dropped as they pass
// (each is in the journal line that finalized it) and its live state is kept exactly.
// The file is generated here, streamed to a temp dir; AIHUB_TEST_LEGACY_MB sets its size.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createWriteStream, existsSync, rmSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { LEGACY_STATE_FILE, STATE_FILE, Store } from '../../../gateway/store/store.ts';
import { fillTxn, fillTxnId } from '../../support/history-fill.ts';
import { tempDir } from '../../support/temp.ts';

const MEGABYTES = Number(process.env.AIHUB_TEST_LEGACY_MB ?? 530);

async function writeLegacy(file: string, bytes: number): Promise<{ rows: number }> {
  const out = createWriteStream(file, { mode: 0o600 });
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, 'drain');
  };
  const at = '2026-01-01T00:00:00.000Z';
  await write(
    `{"format":"aihub-state","version":1,"seq":0,"meta":{"admin_token_hash":null,"created_at":"${at}"},` +
      `"balances":{"funding:topup":-7000000,"wallet:acc_live":5000000,"hold:acc_live":2000000,"__proto__":0},` +
      `"tables":{"accounts":{"acc_live":{"id":"acc_live","name":"Live \\"quoted\\" ü","services":{"ai":true}}},"payment_txns":{`,
  );
  // One pending transaction (live state), then finalized ones (history) up to the size asked.
  const pending = {
    ...fillTxn(0, 'acc_live', at, false),
    id: 'txn_pending',
    status: 'pending',
    stage: 'awaiting_status',
    finalized_at: null,
  };
  await write(`"txn_pending":${JSON.stringify(pending)}`);
  let written = 0;
  let rows = 0;
  while (written < bytes) {
    const parts: string[] = [];
    for (let k = 0; k < 2_000; k++, rows++)
      parts.push(
        `,"${fillTxnId(rows)}":${JSON.stringify(fillTxn(rows, `acc_${rows % 100}`, at, rows % 17 === 0))}`,
      );
    const text = parts.join('');
    written += text.length;
    await write(text);
  }
  await write(
    `},"usage":{"acc_live":{"requests":3,"prompt_tokens":30,"completion_tokens":48,"cost_micros":3330}}}}`,
  );
  out.end();
  await once(out, 'finish');
  return { rows };
}

test(
  `a version-1 state.json of ${MEGABYTES} MB (past V8's 512 MB string limit) migrates, streamed, with its live state`,
  { timeout: 900_000 },
  async () => {
    const data_dir = tempDir('aihub-legacy-big-');
    try {
      const legacy = join(data_dir, LEGACY_STATE_FILE);
      const { rows } = await writeLegacy(legacy, MEGABYTES * 1e6);
      assert.ok(statSync(legacy).size > MEGABYTES * 1e6, `${statSync(legacy).size} bytes`);
      const warnings: string[] = [];
      const store = await Store.open(data_dir, { warn: (message) => warnings.push(message) });
      try {
        assert.match(warnings.join('\n'), /migrated/);
        assert.ok(!existsSync(legacy), 'state.json is gone once the new checkpoint is written');
        assert.ok(existsSync(join(data_dir, STATE_FILE)));
        assert.deepEqual(store.state.balances, {
          'funding:topup': -7000000,
          'wallet:acc_live': 5000000,
          'hold:acc_live': 2000000,
          ['__proto__']: 0,
        });
        assert.equal(
          Object.getPrototypeOf(store.state.balances),
          Object.prototype,
          'a key named __proto__ is data, not a prototype',
        );
        assert.deepEqual(
          Object.keys(store.rows('payment_txns')),
          ['txn_pending'],
          `the ${rows} finalized transactions left the document`,
        );
        assert.equal(store.get('payment_txns', 'txn_pending')?.status, 'pending');
        assert.equal(store.get('accounts', 'acc_live')?.name, 'Live "quoted" ü');
        assert.deepEqual(
          { ...store.rows('usage').acc_live },
          { requests: 3, prompt_tokens: 30, completion_tokens: 48, cost_micros: 3330 },
        );
      } finally {
        await store.close();
      }
      const reopened = await Store.open(data_dir);
      assert.equal(reopened.get('payment_txns', 'txn_pending')?.status, 'pending');
      assert.equal(reopened.state.balances['wallet:acc_live'], 5000000);
      await reopened.close();
    } finally {
      rmSync(data_dir, { recursive: true, force: true });
    }
  },
);

test('a version-1 state.json cut short is refused, with the file named', async () => {
  const data_dir = tempDir('aihub-legacy-cut-');
  try {
    const legacy = join(data_dir, LEGACY_STATE_FILE);
    const out = createWriteStream(legacy, { mode: 0o600 });
    out.end(
      '{"format":"aihub-state","version":1,"seq":0,"meta":{},"balances":{},"tables":{"accounts":{"a":{"id":"a"',
    );
    await once(out, 'finish');
    await assert.rejects(
      Store.open(data_dir),
      (error: Error) => error.message.includes(legacy) && /refusing to migrate/.test(error.message),
    );
    assert.ok(existsSync(legacy), 'the old checkpoint stays');
  } finally {
    rmSync(data_dir, { recursive: true, force: true });
  }
});
