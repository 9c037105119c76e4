// The accounts room's commands, on a real store: a key is revoked once (the admin API, the
// console and the dashboard call the same command), and a key of another account is no such key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MAX_REVOKED_KEYS_KEPT,
  createAccount,
  createApiKey,
  revokeApiKey,
} from '../../gateway/accounts/accounts.ts';
import { findApiKey } from '../../gateway/accounts/auth.ts';
import { addSpend } from '../../gateway/accounts/key-limits.ts';
import { ServiceError } from '../../gateway/kernel/errors.ts';
import { Store } from '../../gateway/store/store.ts';
import { tempDir } from '../support/temp.ts';

test('revokeApiKey: revokes once, then says it was revoked already; another account cannot revoke it', async () => {
  const store = await Store.open(tempDir('aihub-accounts-'));
  try {
    const keys = store.indexBy('keys', 'account_id');
    const { owner, other, key_id } = await store.transact((tx) => {
      const owner = createAccount(tx, { email: 'owner@example.com' });
      const other = createAccount(tx, { email: 'other@example.com' });
      return { owner, other, key_id: createApiKey(tx, keys, owner.id, 'k').record.id };
    });
    const not_found = (error: unknown) =>
      error instanceof ServiceError && error.kind === 'not_found' && error.code === 'key_not_found';
    await assert.rejects(
      store.transact((tx) => revokeApiKey(tx, key_id, other.id)),
      not_found,
    );
    assert.equal(store.get('keys', key_id)!.revoked_at, null, 'a refused revoke changes nothing');
    assert.equal(await store.transact((tx) => revokeApiKey(tx, key_id, owner.id)), true);
    const revoked_at = store.get('keys', key_id)!.revoked_at;
    assert.ok(revoked_at);
    assert.equal(
      await store.transact((tx) => revokeApiKey(tx, key_id)),
      false,
      'the admin revoking again is no change',
    );
    assert.equal(store.get('keys', key_id)!.revoked_at, revoked_at);
    await assert.rejects(
      store.transact((tx) => revokeApiKey(tx, 'key_nope')),
      not_found,
    );
  } finally {
    await store.close();
  }
});

test('createApiKey: keys created and revoked in a loop keep at most 50 revoked rows; a deleted key is unknown and its figures go', async () => {
  const data_dir = tempDir('aihub-accounts-');
  // One instant for every commit: revocations in the same millisecond (a fast loop) keep
  // their order, which the random key ids must not decide.
  const now = () => new Date('2026-01-01T00:00:00.000Z');
  let store = await Store.open(data_dir, { now });
  try {
    const keys = store.indexBy('keys', 'account_id');
    const owner = await store.transact((tx) => createAccount(tx, { email: 'loop@example.com' }));
    const made: Array<{ id: string; key: string }> = [];
    for (let i = 0; i < 120; i++) {
      const { record, key } = await store.transact((tx) =>
        createApiKey(tx, keys, owner.id, `k${i}`),
      );
      made.push({ id: record.id, key });
      // A request with the key: its figures are kept beside the indexes.
      await store.transact((tx) =>
        tx.history({ type: 'api_log', ts: tx.now.toISOString(), key_id: record.id, status: 200 }),
      );
      // The first key spent under a limit (issue #39): its key_spend row must go with it.
      if (i === 0) await store.transact((tx) => addSpend(tx, record.id, 5_000, 0));
      await store.transact((tx) => revokeApiKey(tx, record.id, owner.id));
      assert.ok(
        [...keys.ids(owner.id)].length <= MAX_REVOKED_KEYS_KEPT + 1,
        `after ${i + 1} keys the account holds ${[...keys.ids(owner.id)].length} rows`,
      );
    }
    const kept = new Set(keys.ids(owner.id));
    assert.deepEqual(
      made.slice(-(MAX_REVOKED_KEYS_KEPT + 1)).map((k) => kept.has(k.id)),
      new Array(MAX_REVOKED_KEYS_KEPT + 1).fill(true),
      'the most recently revoked are kept',
    );
    const oldest = made[0]!;
    assert.equal(store.get('keys', oldest.id), undefined);
    assert.deepEqual(findApiKey(store.state, oldest.key), { ok: false, reason: 'unknown' });
    assert.deepEqual(findApiKey(store.state, made.at(-1)!.key), { ok: false, reason: 'revoked' });
    assert.equal(store.archive.keys.has(oldest.id), false, 'its figures went with it');
    assert.equal(store.get('key_spend', oldest.id), undefined, 'and what it spent under its limit');
    assert.equal(store.archive.keys.get(made.at(-1)!.id)?.requests, 1);
    await store.close();
    // The same after a restart (the journal replayed, the indexes' figures from the manifest).
    store = await Store.open(data_dir, { now });
    assert.equal(store.archive.keys.has(oldest.id), false);
    assert.equal(store.indexBy('keys', 'account_id').ids(owner.id).size, MAX_REVOKED_KEYS_KEPT + 1);
  } finally {
    await store.close();
  }
});
