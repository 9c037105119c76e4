// Issue #35, item 1: every statement equals the ledger, whatever the business. fast-check draws
// a sequence of business over weeks of a fake clock (so that reversals and refunds fall in
// other months than what they undo): recharges (successes, declines, pending ones that settle
// or fail), bills with a fee and its GST, PAN lookups, DMT transfers split into parts (some
// parts declined, some failing after the bank took them, refunded by the customer's OTP),
// admin reversals of any success, admin holds and refunds of pending ones, a distributor
// funding its retailers and earning overrides. Run through the gateway as main.ts builds it,
// over real HTTP on loopback (JSON-file store). Then, for every account and every month, the
// commission statement's totals must equal what that account's postings of that month moved
// (re-added here from the journal: commission:*, override:*, tds:194h, gst:*), the admin's
// TDS statement of each quarter what tds:194h moved in it, and `verify` must be clean.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { readJournalPlaced } from '../../gateway/store/journal.ts';
import { verifyDataDir } from '../../gateway/store/verify.ts';
import { statementsCheck } from '../../gateway/payments/statements/verify-check.ts';
import { admin, request, tempDir } from './helpers.js';
import {
  VALID_KYC,
  addBeneficiary,
  paymentsConfig,
  transferWithOtp,
  verifiedRemitter,
} from '../support/payments-helpers.js';
import { serveInProcess } from '../support/route-table.ts';

const ADMIN_TOKEN = 'statements-property-admin-token-0123456789';
const DAY_MS = 86_400_000;
const IST_MS = 330 * 60_000;
const micros = (units: number) => Math.round(units * 1e6);
const istMonth = (ms: number) => new Date(ms + IST_MS).toISOString().slice(0, 7);
/** Runs: each one a fresh gateway and a few dozen requests (4 to 5 s each here, 10 in about 50 s). */
const RUNS = Number(process.env.STATEMENTS_PROPERTY_RUNS ?? 10);

type Who = 0 | 1 | 2; // retailer 0, retailer 1, the distributor
type Action =
  | { t: 'recharge'; who: Who; amount: number; suffix: string }
  | { t: 'bill'; who: Who; amount: number; suffix: string }
  | { t: 'pan'; who: Who }
  | { t: 'dmt'; who: 0 | 1; amount: number; bene: number }
  | { t: 'reverse'; pick: number }
  | { t: 'hold'; pick: number }
  | { t: 'fund'; who: 0 | 1; amount: number }
  | { t: 'days'; days: number };

const who = fc.constantFrom<Who>(0, 1, 2);
const action: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant('recharge' as const),
      who,
      amount: fc.integer({ min: 10, max: 999 }),
      suffix: fc.constantFrom('3210', '3210', '0001', '0002', '0003', '0005'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('bill' as const),
      who,
      amount: fc.integer({ min: 100, max: 3000 }),
      suffix: fc.constantFrom('4567', '4567', '0001'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('pan' as const), who }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('dmt' as const),
      who: fc.constantFrom<0 | 1>(0, 1),
      amount: fc.integer({ min: 100, max: 12_000 }),
      bene: fc.nat(3),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ t: fc.constant('reverse' as const), pick: fc.nat(1_000) }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('hold' as const), pick: fc.nat(1_000) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('fund' as const),
      who: fc.constantFrom<0 | 1>(0, 1),
      amount: fc.integer({ min: 100, max: 5_000 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('days' as const),
      days: fc.integer({ min: 1, max: 24 }),
    }),
  },
);

/** The account numbers of the beneficiaries: success, declined, failing after the bank took it, later parts declined. */
const BENE_ACCOUNTS = ['123456789012', '123456780001', '123456780003', '123456780009'];

/** What the runs did, over all of them (a property that never reversed anything proves little). */
const seen: Record<string, number> = {};
const tally = (what: string) => (seen[what] = (seen[what] ?? 0) + 1);
/** Tallies a business reply by its service's final status. */
const tallyReply = (what: string, reply: { status: number; body: any }) =>
  tally(
    `${what} ${reply.status === 200 ? (reply.body?.data?.status ?? reply.body?.status ?? 'ok') : reply.status}`,
  );

interface Moved {
  gross: number;
  tds: number;
  cgst: number;
  sgst: number;
  igst: number;
}

/** What each account's postings moved per IST month, re-added from the journal's raw entries. */
function journalMovements(data_dir: string): Map<string, Moved> {
  const moved = new Map<string, Moved>();
  for (const { record } of readJournalPlaced(join(data_dir, 'journal'), 0, { repair: false }))
    for (const op of record.ops) {
      if (op.o !== 'post') continue;
      const key = `${op.p.account_id ?? ''}|${istMonth(Date.parse(op.p.ts))}`;
      const m = moved.get(key) ?? { gross: 0, tds: 0, cgst: 0, sgst: 0, igst: 0 };
      for (const [account, amount] of op.p.entries) {
        if (/^(commission|override):/.test(account)) m.gross -= amount;
        else if (account === 'tds:194h') m.tds += amount;
        else if (account === 'gst:cgst') m.cgst += amount;
        else if (account === 'gst:sgst' || account === 'gst:utgst') m.sgst += amount;
        else if (account === 'gst:igst') m.igst += amount;
      }
      moved.set(key, m);
    }
  return moved;
}

/** `from` and `to` of an IST month, as ISO timestamps. */
function monthRange(month: string): string {
  const [year, m] = month.split('-').map(Number) as [number, number];
  const from = Date.UTC(year, m - 1, 1) - IST_MS;
  const to = Date.UTC(year, m, 1) - IST_MS - 1;
  return `from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;
}

function quarterOf(month: string): string {
  const [year, m] = month.split('-').map(Number) as [number, number];
  const start = m >= 4 ? year : year - 1;
  const quarter = m >= 4 ? `Q${Math.floor((m - 4) / 3) + 1}` : 'Q4';
  return `fy=${start}-${String((start + 1) % 100).padStart(2, '0')}&quarter=${quarter}`;
}

async function runBusiness(actions: Action[]): Promise<void> {
  const data_dir = tempDir('aihub-stmt-prop-');
  const config_file = join(tempDir('aihub-stmt-prop-config-'), 'config.json');
  const config = paymentsConfig({ duplicate_window_ms: 0 }) as {
    payments: Record<string, unknown>;
  };
  config.payments.tax = {
    operator: { name: 'AIHub Payments Pvt Ltd', gstin: '29AAACA1234A1ZG', pan: 'AAACA1234A' },
  };
  config.payments.bills = {
    billers: [
      {
        biller_id: 'BESCOM',
        name: 'BESCOM (Bengaluru)',
        category: 'electricity',
        consumer_pattern: '^\\d{10}$',
        fee: 5,
        commission_pct: 0.5,
      },
    ],
  };
  writeFileSync(config_file, JSON.stringify(config));
  // 20 January 2025, 10:00 IST: a few days of business reach February, weeks reach March and April.
  let now_ms = Date.parse('2025-01-20T04:30:00Z');
  const clock = { now: () => new Date(now_ms) };
  const { url, stop } = await serveInProcess(data_dir, ADMIN_TOKEN, { clock, config_file });
  const gw = { url, admin_token: ADMIN_TOKEN };
  const api = admin(gw);
  const call = async (
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: unknown,
  ) => request(`${url}${path}`, { method, headers, ...(body ? { body } : {}) });
  const ok = (reply: { status: number; body: unknown }, what: string) =>
    assert.equal(reply.status, 200, `${what}: ${JSON.stringify(reply.body)}`);
  try {
    // The distributor (Gold from the admin) and two retailers on its Silver, in two GST positions.
    const services = { recharge: true, bills: true, pan: true, dmt: true };
    const registered = await request(`${url}/api/register`, {
      body: { email: 'd@example.com', password: 'correct horse battery', name: 'Distributor' },
    });
    const d = {
      account_id: registered.body.data.account_id as string,
      headers: { 'x-api-key': registered.body.data.api_key as string },
    };
    ok(
      await call('POST', '/api/kyc', d.headers, { ...VALID_KYC, gstin: undefined, state: '29' }),
      'kyc',
    );
    ok(await api.post(`/admin/kyc/${d.account_id}/approve`, {}), 'approve');
    ok(await api.post(`/admin/accounts/${d.account_id}/services`, services), 'services');
    ok(
      await api.post(`/admin/accounts/${d.account_id}/credit`, {
        amount: 60_000,
        reference: 'fund-d',
      }),
      'credit',
    );
    const gold = await api.post('/admin/schemes', {
      name: 'Gold',
      slabs: [
        { id: 'recharge', service: 'recharge', type: 'percent', value: 3.1, cap: 25 },
        { id: 'bills', service: 'bills', type: 'percent', value: 0.9 },
        { id: 'pan', service: 'pan', type: 'flat', value: 0.5 },
      ],
    });
    assert.equal(gold.status, 201, JSON.stringify(gold.body));
    ok(
      await api.put(`/admin/accounts/${d.account_id}/network`, {
        role: 'distributor',
        scheme_id: gold.body.scheme_id,
      }),
      'network',
    );
    const silver = await call('POST', '/api/network/schemes', d.headers, {
      name: 'Silver',
      slabs: [
        { id: 'recharge', service: 'recharge', type: 'percent', value: 2.3, cap: 20 },
        { id: 'bills', service: 'bills', type: 'percent', value: 0.6 },
        { id: 'pan', service: 'pan', type: 'flat', value: 0.3 },
      ],
    });
    assert.equal(silver.status, 201, JSON.stringify(silver.body));
    const people: Array<{ account_id: string; headers: Record<string, string> }> = [];
    for (const [i, kyc] of [
      { ...VALID_KYC, name: 'Pune Recharge Point' },
      { ...VALID_KYC, name: 'Village Kiosk', gstin: undefined },
    ].entries()) {
      const created = await call('POST', '/api/network/retailers', d.headers, {
        email: `r${i}@example.com`,
        password: 'correct horse battery',
        name: kyc.name,
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const r = {
        account_id: created.body.data.account_id as string,
        headers: { 'x-api-key': created.body.data.api_key as string },
      };
      ok(await call('POST', '/api/kyc', r.headers, kyc), 'kyc');
      ok(await api.post(`/admin/kyc/${r.account_id}/approve`, {}), 'approve');
      ok(await api.post(`/admin/accounts/${r.account_id}/services`, services), 'services');
      ok(
        await call('PUT', `/api/network/retailers/${r.account_id}/scheme`, d.headers, {
          scheme_id: silver.body.data.scheme_id,
        }),
        'scheme',
      );
      ok(
        await call('POST', '/api/network/funds', d.headers, {
          retailer_id: r.account_id,
          amount: 20_000,
          reference: `float-${i}`,
        }),
        'funds',
      );
      people.push(r);
    }
    people.push(d);
    const gateway_like = { url } as Parameters<typeof verifiedRemitter>[0];
    const benes: string[][] = [];
    for (const r of people.slice(0, 2)) {
      await verifiedRemitter(gateway_like, r.headers, '9123456780');
      const ids: string[] = [];
      for (const account of BENE_ACCOUNTS)
        ids.push(await addBeneficiary(gateway_like, r.headers, '9123456780', account));
      benes.push(ids);
    }
    const headersOf = new Map(people.map((p) => [p.account_id, p.headers]));

    const listed = async (status: string) => {
      const reply = await api.get(`/admin/transactions?status=${status}&limit=100`);
      ok(reply, `list ${status}`);
      return reply.body.data as Array<{ txn_id: string; account_id: string }>;
    };
    /** After the clock moved: pending ones settle; those failed after the bank took them are refunded by OTP. */
    const settle = async () => {
      const deadline = Date.now() + 15_000;
      while ((await listed('pending')).length > 0) {
        assert.ok(Date.now() < deadline, 'pending transactions settle once their checks are due');
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      for (const t of await listed('refund_pending')) {
        const headers = headersOf.get(t.account_id)!;
        const otp = await call('POST', `/api/dmt/refund/${t.txn_id}/otp`, headers, {});
        ok(otp, 'refund otp');
        ok(
          await call('POST', `/api/dmt/refund/${t.txn_id}`, headers, {
            otp: otp.body.data.sandbox_otp,
          }),
          'refund',
        );
        tally('refunded by OTP');
      }
    };

    let seq = 0;
    for (const a of actions) {
      seq++;
      switch (a.t) {
        case 'recharge':
          tallyReply(
            'recharge',
            await call('POST', '/api/recharge', people[a.who]!.headers, {
              operator_id: 2,
              number: `987654${a.suffix}`,
              amount: a.amount,
            }),
          );
          break;
        case 'bill':
          tallyReply(
            'bill',
            await call('POST', '/api/bills/pay', people[a.who]!.headers, {
              biller_id: 'BESCOM',
              consumer_number: `123456${a.suffix}`,
              amount: a.amount,
            }),
          );
          break;
        case 'pan':
          tallyReply(
            'pan',
            await call('POST', '/api/pan-find', people[a.who]!.headers, {
              pan_number: `ABCPE${String(1000 + seq)}F`,
            }),
          );
          break;
        case 'dmt':
          tallyReply(
            'dmt',
            await transferWithOtp(gateway_like, people[a.who]!.headers, {
              mobile: '9123456780',
              bene_id: benes[a.who]![a.bene]!,
              amount: a.amount,
              txn_type: 'IMPS',
            }),
          );
          break;
        case 'reverse': {
          const done = await listed('success');
          if (done.length > 0)
            ok(
              await api.post(`/admin/transactions/${done[a.pick % done.length]!.txn_id}/reverse`, {
                reason: 'confirmed failed by the operator',
              }),
              'reverse',
            );
          if (done.length > 0) tally('reversed');
          break;
        }
        case 'hold': {
          // A pending one to hold (a recharge that settles only on a status check), if none is.
          if ((await listed('pending')).length === 0)
            await call('POST', '/api/recharge', people[a.pick % 3]!.headers, {
              operator_id: 2,
              number: '9876540002',
              amount: 100 + (a.pick % 400),
            });
          const live = await listed('pending');
          if (live.length > 0) {
            const id = live[a.pick % live.length]!.txn_id;
            ok(await api.post(`/admin/transactions/${id}/hold`, { reason: 'a look' }), 'hold');
            ok(
              await api.post(`/admin/transactions/${id}/refund`, { reason: 'refunded' }),
              'refund',
            );
            tally('held and refunded');
          }
          break;
        }
        case 'fund':
          tallyReply(
            'fund',
            await call('POST', '/api/network/funds', d.headers, {
              retailer_id: people[a.who]!.account_id,
              amount: a.amount,
              reference: `top-${seq}`,
            }),
          );
          break;
        case 'days':
          now_ms += a.days * DAY_MS;
          await settle();
          break;
      }
    }
    now_ms += DAY_MS;
    await settle();

    // Every account's statement of every month against what its postings moved.
    const moved = journalMovements(data_dir);
    const months: string[] = [];
    for (
      let m = Date.parse('2025-01-20T04:30:00Z');
      istMonth(m) <= istMonth(now_ms);
      m += 28 * DAY_MS
    )
      if (!months.includes(istMonth(m))) months.push(istMonth(m));
    if (!months.includes(istMonth(now_ms))) months.push(istMonth(now_ms));
    const tds_per_quarter = new Map<string, number>();
    for (const month of months) {
      for (const p of people) {
        const reply = await call(
          'GET',
          `/api/reports/commission-statement?month=${month}`,
          p.headers,
        );
        ok(reply, 'statement');
        const t = reply.body.data.totals;
        const want = moved.get(`${p.account_id}|${month}`) ?? {
          gross: 0,
          tds: 0,
          cgst: 0,
          sgst: 0,
          igst: 0,
        };
        assert.deepEqual(
          {
            gross: micros(t.gross),
            tds: micros(t.tds),
            cgst: micros(t.cgst),
            sgst: micros(t.sgst),
            igst: micros(t.igst),
          },
          want,
          `the ${month} statement of ${p.account_id} against its postings`,
        );
        // The commissions report's credited totals over the same dates: the same postings.
        const report = await call(
          'GET',
          `/api/reports/commissions?${monthRange(month)}`,
          p.headers,
        );
        ok(report, 'commissions report');
        assert.deepEqual(
          [
            micros(report.body.data.totals.credited.gross),
            micros(report.body.data.totals.credited.tds),
          ],
          [want.gross, want.tds],
          `the ${month} commissions report of ${p.account_id}: credited against its postings`,
        );
        tds_per_quarter.set(
          quarterOf(month),
          (tds_per_quarter.get(quarterOf(month)) ?? 0) + want.tds,
        );
      }
      const nobody = moved.get(`|${month}`);
      assert.ok(
        !nobody || Object.values(nobody).every((v) => v === 0),
        'no statement money moved by no account',
      );
    }
    for (const [quarter, tds] of tds_per_quarter) {
      const all = await api.get(`/admin/reports/tds-statement?${quarter}`);
      ok(all, 'admin tds');
      assert.equal(
        micros(all.body.totals.tds),
        tds,
        `the admin's TDS of ${quarter} against tds:194h`,
      );
    }
    const verified = await verifyDataDir(data_dir, { full: true, checks: [statementsCheck()] });
    assert.deepEqual(verified.breaches, []);
  } finally {
    await stop();
  }
}

test(
  'property: random business over months; every statement, and the admin’s TDS of every quarter, equals the ledger',
  { timeout: 600_000 },
  async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 6, maxLength: 28 }), runBusiness),
      {
        numRuns: RUNS,
        endOnFailure: true,
        // A counterexample to replay first (fast-check prints it), as JSON.
        examples: process.env.STATEMENTS_PROPERTY_EXAMPLE
          ? [[JSON.parse(process.env.STATEMENTS_PROPERTY_EXAMPLE) as Action[]]]
          : [],
      },
    );
    console.log(`# business over ${RUNS} runs: ${JSON.stringify(seen)}`);
  },
);
