import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Store } from '../../../gateway/store/store.ts';
import {
  FUNDING_TOPUP,
  balanceMicros,
  captureHold,
  creditWallet,
  openHold,
} from '../../../gateway/ledger/ledger.ts';
import { HistoryIndex } from '../../../gateway/web/history-index.ts';
import { audit } from '../../../gateway/web/audit.ts';
import { tempDir } from '../../support/temp.ts';

/** Every item of an async iterable (Node 20 has no Array.fromAsync). */
async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

test('the history index: wallet rows with opening/closing balances, key stats, daily spend, audit; it follows new records across segments', async () => {
  const dir = tempDir('aihub-web-index-');
  let now = new Date('2025-05-01T10:00:00Z');
  // Tiny segments, so the index must follow the journal from one segment file to the next.
  const store = await Store.open(dir, { now: () => now, segment_bytes: 4096 });
  try {
    const index = new HistoryIndex(store);
    await store.transact((tx) =>
      creditWallet(tx, {
        account_id: 'acc_a',
        amount_micros: 100_000_000,
        from: FUNDING_TOPUP,
        memo: 'top-up',
        ref: 'r1',
      }),
    );
    await store.transact((tx) =>
      creditWallet(tx, {
        account_id: 'acc_b',
        amount_micros: 5_000_000,
        from: FUNDING_TOPUP,
        memo: 'other account',
      }),
    );
    await index.catchUp();
    assert.deepEqual(
      (await collect(index.walletRows('acc_a'))).map((row) => [
        row.memo,
        row.opening_micros,
        row.delta_micros,
        row.closing_micros,
        row.ref,
      ]),
      [['top-up', 0, 100_000_000, 100_000_000, 'r1']],
    );

    // A chat request: hold, capture with part of the hold returned, and its usage record.
    for (let i = 0; i < 40; i++) {
      now = new Date(Date.parse('2025-05-01T10:00:00Z') + i * 3_600_000);
      await store.transact((tx) => {
        const hold = openHold(tx, {
          account_id: 'acc_a',
          amount_micros: 50_000,
          purpose: 'chat',
          ref: `req_${i}`,
        });
        captureHold(tx, hold.id, {
          amount_micros: 20_000,
          to: 'revenue:ai',
          memo: `chat lite ${i}`,
        });
        tx.history({
          type: 'usage',
          ts: tx.now.toISOString(),
          account_id: 'acc_a',
          key_id: 'key_1',
          tier: i % 2 ? 'lite' : 'max',
          model: 'm',
          prompt_tokens: 1,
          completion_tokens: 1,
          cost_micros: 20_000,
        });
      });
      if (i % 7 === 0) await index.catchUp();
    }
    await store.transact((tx) =>
      audit(tx, { actor: 'admin', action: 'wallet.credit', account_id: 'acc_a', detail: 'x' }),
    );
    await index.catchUp();
    assert.ok(
      readdirSync(join(dir, 'journal')).length > 2,
      'the journal rolled over into several segments',
    );

    const rows = await collect(index.walletRows('acc_a'));
    assert.equal(rows.length, 1 + 40 * 2);
    for (let i = 1; i < rows.length; i++) {
      assert.equal(
        rows[i]!.opening_micros,
        rows[i - 1]!.closing_micros,
        'each row opens where the previous closed',
      );
      assert.equal(rows[i]!.closing_micros, rows[i]!.opening_micros + rows[i]!.delta_micros);
    }
    assert.equal(
      rows.at(-1)!.closing_micros,
      balanceMicros(store.state, 'acc_a'),
      'the last closing balance is the balance',
    );
    assert.equal(rows[1]!.memo, 'chat lite 0', 'a reservation row is named after what it paid for');
    assert.equal(rows[2]!.memo, 'chat lite 0: unused reserve returned');
    assert.equal(rows[2]!.delta_micros, 30_000);

    const stats = await index.keyStats('key_1');
    assert.equal(stats.requests, 40);
    assert.equal(stats.cost_micros, 800_000);
    assert.equal(stats.last_used, '2025-05-03T01:00:00.000Z');
    assert.deepEqual(await index.keyStats('key_unknown'), {
      requests: 0,
      cost_micros: 0,
      last_used: null,
    });

    const days = await index.dailySpend('acc_a', '2025-05-02', 3);
    assert.deepEqual(
      days.map((day) => day.day),
      ['2025-04-30', '2025-05-01', '2025-05-02'],
    );
    assert.equal(days[0]!.tiers.size, 0);
    // 14 requests on May 1 (10:00..23:00), 24 on May 2, 2 on May 3.
    assert.equal(days[1]!.tiers.get('max'), 7 * 20_000);
    assert.equal(days[1]!.tiers.get('lite'), 7 * 20_000);
    assert.equal(days[2]!.tiers.get('max')! + days[2]!.tiers.get('lite')!, 24 * 20_000);

    assert.deepEqual(
      (await index.auditPage(null, 1, 50)).rows.map((entry) => [
        entry.actor,
        entry.action,
        entry.account_id,
        entry.detail,
      ]),
      [['admin', 'wallet.credit', 'acc_a', 'x']],
    );

    assert.deepEqual(
      (await index.walletPage('acc_a', 1, 2)).rows,
      rows.slice(-2).reverse(),
      'a page, newest first',
    );
    assert.equal((await index.walletPage('acc_a', 1, 2)).total, rows.length);
    // After a restart the durable indexes answer the same.
    await store.close();
    const reopened = await Store.open(dir, { now: () => now, segment_bytes: 4096 });
    try {
      const fresh = new HistoryIndex(reopened);
      await fresh.catchUp();
      assert.deepEqual(await collect(fresh.walletRows('acc_a')), rows);
      assert.deepEqual(await fresh.keyStats('key_1'), stats);
      assert.deepEqual(await fresh.dailySpend('acc_a', '2025-05-02', 3), days);
    } finally {
      await reopened.close();
    }
    return;
  } finally {
    if (!(store as any).closed) await store.close();
  }
});

test("the wallet export reads each of the account's index entries once, however long the history", async () => {
  const store = await Store.open(tempDir('aihub-web-export-'));
  try {
    const index = new HistoryIndex(store);
    const POSTINGS = 1_300; // more than one batch of the walk, and than the old 500-row pages
    for (let done = 0; done < POSTINGS; done += 100)
      await store.transact((tx) => {
        for (let i = done; i < done + 100; i++)
          creditWallet(tx, {
            account_id: 'acc_long',
            amount_micros: 1_000_000,
            from: FUNDING_TOPUP,
            memo: `credit ${i}`,
          });
      });
    await index.catchUp();
    const before = store.archive.counters.entries;
    const rows = await collect(index.walletRows('acc_long'));
    const read = store.archive.counters.entries - before;
    assert.equal(rows.length, POSTINGS);
    assert.deepEqual(
      rows.map((row) => row.memo),
      Array.from({ length: POSTINGS }, (_, i) => `credit ${i}`),
      'oldest first, every row',
    );
    assert.equal(read, POSTINGS, 'one walk of the list: each entry read once');
  } finally {
    await store.close();
  }
});
