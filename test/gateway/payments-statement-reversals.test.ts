// Issue #35, the table's "statements" row, over HTTP against the real gateway (either store:
// the PostgreSQL one in a run with AIHUB_TEST_DATABASE_URL): three recharges earn commissions,
// an operator reverses two of them. The month's commission statement lists each reversal as a
// negative line (gross and TDS taken back) in the month of the reversal; its totals, the
// quarter's TDS statement and the admin's TDS statement of every deductee equal what the
// ledger moved (commission:*, tds:194h), to the paisa; `verify` agrees.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admin, request } from './helpers.ts';
import {
  ledgerBalances,
  onboard,
  startPaymentsGateway,
  verifyOk,
} from '../support/payments-helpers.ts';

const micros = (units: number) => Math.round(units * 1e6);
const IST_MS = 330 * 60_000;
const istMonth = (ms: number) => new Date(ms + IST_MS).toISOString().slice(0, 7);

/** The financial year and quarter (`2025-26`, `Q3`) of a month `YYYY-MM`. */
function quarterOf(month: string): { fy: string; quarter: string } {
  const [year, m] = month.split('-').map(Number) as [number, number];
  const start = m >= 4 ? year : year - 1;
  return {
    fy: `${start}-${String((start + 1) % 100).padStart(2, '0')}`,
    quarter: m >= 4 ? `Q${Math.floor((m - 4) / 3) + 1}` : 'Q4',
  };
}

test(
  'two admin reversals: negative lines in the reversal’s month, TDS given back, every TDS total equal to tds:194h',
  { timeout: 120_000 },
  async () => {
    const gw = await startPaymentsGateway();
    try {
      const first_month = istMonth(Date.now());
      const { headers, account_id } = await onboard(gw, 5_000);
      const api = admin(gw);
      const recharges: Array<{ id: string; commission: number; tds: number }> = [];
      for (const amount of [199, 257, 349]) {
        const reply = await request(`${gw.url}/api/recharge`, {
          headers,
          body: { operator_id: 1, number: '9876543210', amount },
        });
        assert.equal(reply.status, 200, JSON.stringify(reply.body));
        assert.equal(reply.body.data.status, 'success');
        assert.ok(reply.body.data.tds > 0, 'the commission bears TDS');
        recharges.push({
          id: reply.body.txn_id,
          commission: reply.body.data.commission,
          tds: reply.body.data.tds,
        });
      }
      for (const r of recharges.slice(0, 2)) {
        const reversed = await api.post(`/admin/transactions/${r.id}/reverse`, {
          reason: 'operator confirmed the recharge failed',
        });
        assert.equal(reversed.status, 200, JSON.stringify(reversed.body));
        assert.equal(reversed.body.status, 'reversed');
      }
      const last_month = istMonth(Date.now());
      const ledger = await ledgerBalances(gw);
      const tds_moved = ledger['tds:194h'] ?? 0;
      const commission_paid = -Object.entries(ledger)
        .filter(([name]) => name.startsWith('commission:'))
        .reduce((sum, [, micros]) => sum + micros, 0);
      // What was kept: the third recharge's commission and TDS.
      assert.equal(tds_moved, micros(recharges[2]!.tds));
      assert.equal(commission_paid, micros(recharges[2]!.commission));

      const statement = await request(
        `${gw.url}/api/reports/commission-statement?from_month=${first_month}&to_month=${last_month}`,
        { headers },
      );
      assert.equal(statement.status, 200, JSON.stringify(statement.body));
      const s = statement.body.data;
      const earnings = s.rows.filter((row: { kind: string }) => row.kind === 'commission');
      for (const r of recharges.slice(0, 2)) {
        const lines = earnings.filter((row: { txn_id: string }) => row.txn_id === r.id);
        assert.equal(lines.length, 2, `commission and reversal of ${r.id}`);
        const [earned, reversal] = lines;
        assert.deepEqual([earned.reversal, earned.gross, earned.tds], [false, r.commission, r.tds]);
        assert.deepEqual(
          [reversal.reversal, reversal.gross, reversal.tds, reversal.net],
          [true, -r.commission, -r.tds, -Math.round((r.commission - r.tds) * 100) / 100],
        );
        // In the month the reversal was posted, with the slab and rate of what it reverses.
        assert.equal(reversal.month, istMonth(Date.parse(reversal.date)));
        assert.equal(reversal.slab, earned.slab);
        assert.equal(reversal.tds_rate, earned.tds_rate);
      }
      assert.equal(micros(s.totals.tds), tds_moved);
      assert.equal(micros(s.totals.gross), commission_paid);
      assert.equal(
        s.by_month.reduce((sum: number, m: { tds: number }) => sum + micros(m.tds), 0),
        tds_moved,
      );

      // The quarter (or quarters, if the test ran across a quarter's end): per account and for the admin.
      const quarters = new Map(
        [first_month, last_month].map((m) => [JSON.stringify(quarterOf(m)), quarterOf(m)]),
      );
      let own_tds = 0;
      let admin_tds = 0;
      for (const { fy, quarter } of quarters.values()) {
        const own = await request(
          `${gw.url}/api/reports/tds-statement?fy=${fy}&quarter=${quarter}`,
          { headers },
        );
        assert.equal(own.status, 200, JSON.stringify(own.body));
        own_tds += micros(own.body.data.totals.tds);
        const all = await api.get(`/admin/reports/tds-statement?fy=${fy}&quarter=${quarter}`);
        assert.equal(all.status, 200, JSON.stringify(all.body));
        admin_tds += micros(all.body.totals.tds);
        for (const row of all.body.rows as Array<{ account_id: string; tds: number }>)
          assert.equal(row.account_id, account_id);
      }
      assert.equal(own_tds, tds_moved);
      assert.equal(admin_tds, tds_moved, 'the admin’s quarter TDS is what tds:194h moved');

      // The CSV says which lines are reversals.
      const csv = await fetch(
        `${gw.url}/api/reports/commission-statement?from_month=${first_month}&to_month=${last_month}&format=csv`,
        { headers },
      );
      const csv_lines = (await csv.text()).split('\r\n');
      const header = csv_lines.find((line) => line.startsWith('date,'))!.split(',');
      const reversal_column = header.indexOf('reversal');
      assert.ok(reversal_column > 0);
      assert.equal(
        csv_lines.filter((line) => line.split(',')[reversal_column] === 'true').length,
        2,
      );
      await verifyOk(gw);
    } finally {
      await gw.stop();
    }
  },
);

test(
  'a reversal that takes back an override from an empty wallet: a negative line on the distributor’s statement, the rest owed',
  { timeout: 120_000 },
  async () => {
    const gw = await startPaymentsGateway();
    try {
      const month = istMonth(Date.now());
      const api = admin(gw);
      const d = await onboard(gw, 1_000);
      const gold = await api.post('/admin/schemes', {
        name: 'Gold',
        slabs: [{ id: 'recharge', service: 'recharge', type: 'percent', value: 4 }],
      });
      assert.equal(gold.status, 201, JSON.stringify(gold.body));
      const placed = await api.put(`/admin/accounts/${d.account_id}/network`, {
        role: 'distributor',
        scheme_id: gold.body.scheme_id,
      });
      assert.equal(placed.status, 200, JSON.stringify(placed.body));
      const r = await onboard(gw, 1_000);
      const under = await api.put(`/admin/accounts/${r.account_id}/network`, {
        parent_id: d.account_id,
      });
      assert.equal(under.status, 200, JSON.stringify(under.body));
      const recharge = await request(`${gw.url}/api/recharge`, {
        headers: r.headers,
        body: { operator_id: 1, number: '9876543210', amount: 500 },
      });
      assert.equal(recharge.body.data.status, 'success', JSON.stringify(recharge.body));
      // The distributor sends everything it has (its override included) to its retailer.
      const all = (await request(`${gw.url}/api/wallet/balance`, { headers: d.headers })).body.data
        .balance as number;
      const funded = await request(`${gw.url}/api/network/funds`, {
        headers: d.headers,
        body: { retailer_id: r.account_id, amount: all, reference: 'everything' },
      });
      assert.equal(funded.status, 200, JSON.stringify(funded.body));
      const reversed = await api.post(`/admin/transactions/${recharge.body.txn_id}/reverse`, {
        reason: 'operator confirmed the recharge failed',
      });
      assert.equal(reversed.status, 200, JSON.stringify(reversed.body));

      const statement = await request(`${gw.url}/api/reports/commission-statement?month=${month}`, {
        headers: d.headers,
      });
      assert.equal(statement.status, 200, JSON.stringify(statement.body));
      const lines = statement.body.data.rows.filter(
        (row: { kind: string; txn_id: string }) =>
          row.kind === 'override' && row.txn_id === recharge.body.txn_id,
      );
      assert.equal(lines.length, 2, JSON.stringify(statement.body.data.rows));
      assert.ok(lines[0].gross > 0);
      assert.deepEqual(
        [lines[1].reversal, lines[1].gross, lines[1].tds],
        [true, -lines[0].gross, -lines[0].tds],
      );
      assert.equal(statement.body.data.totals.gross, 0);
      assert.equal(statement.body.data.totals.tds, 0);
      // What the empty wallet could not give back is owed; the books balance.
      const ledger = await ledgerBalances(gw);
      assert.equal(ledger[`receivable:${d.account_id}`], -micros(lines[0].net));
      assert.equal(ledger['tds:194h'] ?? 0, 0);
      await verifyOk(gw);
    } finally {
      await gw.stop();
    }
  },
);
