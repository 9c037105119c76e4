// The accounts room's commands, on a real store: a key is revoked once (the admin API, the
// console and the dashboard call the same command), and a key of another account is no such key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount, createApiKey, revokeApiKey } from '../../gateway/accounts/accounts.ts';
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
