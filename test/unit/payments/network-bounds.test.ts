// A distributor's commission schemes are rows of the live document (up to 500 slabs each):
// a distributor creating schemes in a loop is held to MAX_SCHEMES_PER_DISTRIBUTOR, so the
// table says what bounds it (issue #26, docs/ARCHITECTURE.md#what-bounds-each-table).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../../gateway/http/errors.ts';
import { paymentsConfigSchema } from '../../../gateway/payments/config.ts';
import {
  MAX_SCHEMES_PER_DISTRIBUTOR,
  createScheme,
} from '../../../gateway/payments/network/commands.ts';
import { Pricing } from '../../../gateway/payments/network/pricing.ts';
import { Store } from '../../../gateway/store/store.ts';
import { tempDir } from '../../support/temp.ts';

test('createScheme: a distributor owns at most MAX_SCHEMES_PER_DISTRIBUTOR schemes; the admin is not held to it', async () => {
  const store = await Store.open(tempDir('aihub-network-'));
  try {
    const ctx = { store, pricing: new Pricing(paymentsConfigSchema.parse({})) };
    const at = new Date().toISOString();
    await store.transact((tx) =>
      tx.set('network', 'acct_dist', {
        account_id: 'acct_dist',
        role: 'distributor',
        parent_id: null,
        scheme_id: null,
        created_at: at,
        updated_at: at,
      }),
    );
    for (let i = 0; i < MAX_SCHEMES_PER_DISTRIBUTOR; i++)
      await createScheme(ctx, 'acct_dist', { name: `s${i}`, slabs: [] });
    await assert.rejects(
      createScheme(ctx, 'acct_dist', { name: 'one more', slabs: [] }),
      (error: unknown) =>
        error instanceof ApiError && error.status === 409 && error.code === 'too_many_schemes',
    );
    assert.equal(Object.keys(store.rows('commission_schemes')).length, MAX_SCHEMES_PER_DISTRIBUTOR);
    await createScheme(ctx, null, { name: "the admin's", slabs: [] });
  } finally {
    await store.close();
  }
});
