// A restart within the duplicate window after many keyed recharges (issue #36): the start
// reads the window's transactions as the fields the duplicate check compares (account,
// service, subject, amount, time), not whole: what it held is small per transaction
// (`aihub_payments_start_window_bytes` over `..._transactions`, a structural measure, not a
// time), and on PostgreSQL it reads nothing (the window is rows read in each transaction).
// The window still works after the restart: the same recharge again is refused as a duplicate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, startGateway } from './helpers.ts';
import { onboard, paymentsConfig, startPaymentsGateway } from '../support/payments-helpers.ts';
import { metric } from '../support/multi-gateway.ts';
import { tempDir } from '../support/temp.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const RECHARGES = 120;

test(
  'a restart within the duplicate window holds the fields the check compares, not whole transactions',
  { timeout: 180_000 },
  async (t) => {
    const config = paymentsConfig();
    const data_dir = tempDir();
    let gateway = await startPaymentsGateway(config, { data_dir });
    const shared = gateway.database_url !== undefined;
    let whole_bytes = 0;
    const payer = await onboard(gateway, 100_000);
    try {
      const numbers: string[] = [];
      for (let i = 0; i < RECHARGES; i += 8)
        await Promise.all(
          Array.from({ length: Math.min(8, RECHARGES - i) }, async (_, j) => {
            const number = `97${String(i + j).padStart(6, '0')}31`;
            const reply = await request(`${gateway.url}/api/recharge`, {
              headers: { ...payer.headers, 'idempotency-key': `window-${i + j}` },
              body: { operator_id: 1, number, amount: 10 },
            });
            assert.equal(reply.status, 200, JSON.stringify(reply.body));
            numbers.push(number);
            if (whole_bytes === 0) {
              const txn = await request(`${gateway.url}/api/transactions/${reply.body.txn_id}`, {
                headers: payer.headers,
              });
              whole_bytes = JSON.stringify(txn.body.data ?? txn.body).length;
            }
          }),
        );
      assert.equal(await gateway.stop(), 0);
      const file = join(tempDir('aihub-window-config-'), 'config.json');
      writeFileSync(file, JSON.stringify(config));
      gateway = await startGateway({ data_dir, env: { AIHUB_CONFIG: file } });
      const held = await metric(gateway, 'aihub_payments_start_window_transactions');
      const bytes = await metric(gateway, 'aihub_payments_start_window_bytes');
      const heap = await metric(gateway, 'aihub_nodejs_heap_size_used_bytes');
      t.diagnostic(
        `${shared ? 'PostgreSQL' : 'JSON-file'} store: the start held ${held} transactions in ${bytes} bytes (a whole one: ${whole_bytes} bytes); heap used ${Math.round(heap / 1e6)} MB`,
      );
      if (shared) {
        assert.equal(held, 0, 'PostgreSQL: the window is rows, nothing is read at start');
      } else {
        assert.ok(held >= RECHARGES, `the start read the window's transactions: ${held}`);
        assert.ok(bytes / held < 250, `${bytes / held} bytes per transaction held`);
        assert.ok(bytes / held < whole_bytes / 4, `held ${bytes / held}, whole ${whole_bytes}`);
      }
      // The window still refuses the same recharge again (no key, within 2 minutes).
      const twin = await request(`${gateway.url}/api/recharge`, {
        headers: payer.headers,
        body: { operator_id: 1, number: numbers[0], amount: 10 },
      });
      assert.equal(twin.status, 409, JSON.stringify(twin.body));
      assert.equal(twin.body.error.code, 'duplicate_transaction');
    } finally {
      await gateway.stop();
    }
  },
);
