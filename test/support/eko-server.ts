// A scripted Eko (developers.eko.in, eps.eko.in) on loopback, built from its published
// reference, standing in for a third party the tests cannot reach. It checks each call's
// authentication as Eko documents it (the developer_key header; secret-key =
// base64(HMAC-SHA256(key = base64(access_key), message = secret-key-timestamp)) with a
// timestamp no older than STALE_MS; for Pay BBPS Bill the request_hash over timestamp,
// utility_acc_no, amount and user_code) and answers 403 otherwise, checks initiator_id and
// user_code, and keeps its own record of each transaction by client_ref_id for the
// Transaction Inquiry. What a money call does is chosen by its subject's last digit:
//   2 → response awaited (tx_status 2); the inquiry says so once, then success
//   3 → failure (a transfer: awaited, then refund pending at the inquiry)
//   4 → taken (a success in Eko's record) but never answered: the caller times out
//   5 → taken by an earlier attempt: the answer is "duplicate client_ref_id"
//   6 → on hold at Eko (tx_status 5); the inquiry says so once, then success
//   anything else → success
// A number's operator is Eko's 400 in its circle_area 23; Get Recharge Plans lists three plans
// of operator 400 in circle 23 and answers any other pair as Eko documents a failure
// (status 0, response_type_id 1805). A PAN whose digits are 0000 is not found. Callbacks are sent as Eko sends them (unsigned:
// Eko publishes no signature), the payload of its "Transaction Status Callback".
// A transfer in refund pending (tx_status 3) is refunded as Eko's DMT refund works: `POST
// /transactions/{tid}/refund/otp` sends the remitter Eko's refund OTP (kept in `refund_otps`
// by TID), `POST /transactions/{tid}/refund` with that OTP and `state` 1 refunds it (tx_status
// 4); a wrong OTP is declined, a transfer in any other status is not refundable.
// Eko's customers (DMT senders): Get Customer (`GET /customers/mobile_number:{mobile}`, 463
// when unknown), Create Customer (`PUT` there: Eko sends the customer an OTP), Resend OTP
// (`POST .../otp`) and Verify Customer (`PUT /customers/verification/otp:{otp}` with id_type
// mobile_number and id); the OTPs Eko sent are in `customer_otps` by mobile. A verified
// customer's recipients (`PUT .../recipients/acc_ifsc:{account}_{ifsc}`, the same id again
// for the same account) are paid by `POST /transactions` (recipient_id, channel 1 NEFT or 2
// IMPS, state 1), a money call like Fund Transfer, by the account's last digit.
import { createHmac } from 'node:crypto';
import { json, startUpstream, type Seen, type Upstream } from './payments-upstream.ts';

export const EKO = {
  developer_key: 'becbbce45f79c6f5109f848acd540567',
  access_key: 'd2fe1d99-6298-4af2-8cc5-d97dcf46df30',
  initiator_id: '9962981729',
  user_code: '20810200',
};
/** The plans of Eko's operator 400 in circle 23 (amounts in rupees, as Eko sends them). */
export const EKO_PLANS = [
  { amount: '199', validity: '28 Days', plan_description: 'Unlimited Calls + 1.5 GB/day' },
  { amount: '299', validity: '28 Days', plan_description: 'Unlimited Calls + 2 GB/day' },
  { amount: '719', validity: '84 Days', plan_description: 'Unlimited Calls + 1.5 GB/day' },
];
/** How old a secret-key-timestamp may be (either way). */
export const STALE_MS = 60_000;

export interface EkoTxn {
  client_ref_id: string;
  path: string;
  tid: string;
  tx_status: number;
  /** Inquiries that still answer "awaited" before the final status. */
  awaited: number;
  final: number;
  body: Record<string, any>;
}

export interface EkoServer extends Upstream {
  txns: Map<string, EkoTxn>;
  /** Eko's customers by mobile, and the last OTP Eko sent each. */
  customers: Map<string, { name: string; verified: boolean }>;
  customer_otps: Map<string, string>;
  /** Eko's TID → the refund OTP Eko sent the remitter. */
  refund_otps: Map<string, string>;
  /** Calls refused for their authentication, with why. */
  refused: Array<{ url: string; why: string }>;
  /** POSTs Eko's status callback for `client_ref_id` to `url`, as Eko's record has it. */
  sendCallback(
    url: string,
    client_ref_id: string,
    override?: Record<string, unknown>,
  ): Promise<Response>;
}

const keyOf = (access_key: string) => Buffer.from(access_key).toString('base64');
const mac = (access_key: string, message: string) =>
  createHmac('sha256', keyOf(access_key)).update(message).digest('base64');

function header(seen: Seen, name: string): string | undefined {
  const value = seen.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** Why a call's authentication is refused, or null when it is Eko's documented one. */
function authError(seen: Seen, now_ms: number): string | null {
  if (header(seen, 'developer_key') !== EKO.developer_key) return 'developer_key missing or wrong';
  const timestamp = header(seen, 'secret-key-timestamp');
  if (!timestamp || !/^[0-9]{13}$/.test(timestamp)) return 'secret-key-timestamp missing';
  if (Math.abs(now_ms - Number(timestamp)) > STALE_MS) return 'secret-key-timestamp stale';
  if (header(seen, 'secret-key') !== mac(EKO.access_key, timestamp)) return 'secret-key wrong';
  return null;
}

let tids = 2_886_522_975;

const DUPLICATE = 'Duplicate client_ref_id: a transaction with this reference exists';

/** Eko's answer to a request it does not carry out: a non-zero `status`, response_status_id 1. */
function declined(res: Parameters<typeof json>[0], message: string, status = 1): void {
  json(res, 200, { status, response_status_id: 1, message });
}

export async function startEko(now: () => number = Date.now): Promise<EkoServer> {
  const txns = new Map<string, EkoTxn>();
  const refund_otps = new Map<string, string>();
  const customers: EkoServer['customers'] = new Map();
  const customer_otps = new Map<string, string>();
  let otp_serial = 0;
  const recipients = new Map<
    string,
    { key: string; mobile: string; account: string; ifsc: string; name: string }
  >();
  const recipientOf = (id: unknown) =>
    typeof id === 'string' || typeof id === 'number' ? recipients.get(String(id)) : undefined;
  const isTransfer = (txn: EkoTxn) =>
    txn.path.endsWith('fund-transfer') || txn.path === '/transactions';
  const refused: EkoServer['refused'] = [];
  const tokens = new Map<string, string>();

  const answer = (txn: EkoTxn) => ({
    tx_status: String(txn.tx_status),
    txstatus_desc: DESC[txn.tx_status],
    tid: txn.tid,
    client_ref_id: txn.client_ref_id,
    amount: txn.body.amount,
    ...(isTransfer(txn)
      ? {
          bank_ref_num: txn.tx_status === 0 ? `4093${txn.tid.slice(-8)}` : '',
          recipient_name: String(
            txn.body.recipient_name ?? recipientOf(txn.body.recipient_id)?.name,
          ).toUpperCase(),
          account: txn.body.account ?? recipientOf(txn.body.recipient_id)?.account,
          ifsc: txn.body.ifsc ?? recipientOf(txn.body.recipient_id)?.ifsc,
        }
      : {
          operator_ref: txn.tx_status === 0 ? `OP${txn.tid}` : '',
          utility_acc_no: txn.body.utility_acc_no,
        }),
  });

  /** A money call: its record made, and its answer as its subject's last digit says. */
  const money = (
    req: Seen,
    res: Parameters<typeof json>[0],
    subject: string,
    transfer: boolean,
  ) => {
    const body = req.json;
    const ref = String(body.client_ref_id ?? '');
    if (!ref) return declined(res, 'client_ref_id required');
    const existing = txns.get(ref);
    if (existing) return declined(res, DUPLICATE);
    const digit = subject.at(-1);
    const txn: EkoTxn = {
      client_ref_id: ref,
      path: req.url,
      tid: String(tids++),
      tx_status: 0,
      awaited: 0,
      final: 0,
      body,
    };
    if (digit === '2') Object.assign(txn, { tx_status: 2, awaited: 1, final: 0 });
    if (digit === '6') Object.assign(txn, { tx_status: 5, awaited: 1, final: 0 });
    if (digit === '3')
      Object.assign(
        txn,
        transfer ? { tx_status: 2, awaited: 0, final: 3 } : { tx_status: 1, final: 1 },
      );
    txns.set(ref, txn);
    if (digit === '4') return; // taken, never answered
    if (digit === '5') return declined(res, DUPLICATE);
    const failed = txn.tx_status === 1;
    return json(res, 200, {
      status: failed ? 55 : 0,
      response_status_id: txn.tx_status,
      response_type_id: failed ? 1800 : 325,
      message: failed
        ? 'Error from NPCI'
        : txn.tx_status === 2
          ? 'Transaction initiated'
          : 'Transaction successful',
      data: answer(txn),
    });
  };

  const server = (await startUpstream((req, res) => {
    const why = authError(req, now());
    if (why) {
      refused.push({ url: req.url, why });
      return json(res, 403, { message: 'Forbidden' });
    }
    const url = new URL(req.url, 'http://eko');
    const q = url.searchParams;
    const body = req.json ?? {};
    const initiator = req.method === 'GET' ? q.get('initiator_id') : body.initiator_id;
    if (initiator !== EKO.initiator_id) return declined(res, 'Invalid Sender/Initiator', 319);
    const path = url.pathname;
    if (req.method === 'POST' && path === '/customer/payment/bbps') {
      const expected = mac(
        EKO.access_key,
        `${header(req, 'secret-key-timestamp')}${body.utility_acc_no}${body.amount}${body.user_code}`,
      );
      if (header(req, 'request_hash') !== expected) {
        refused.push({ url: req.url, why: 'request_hash wrong' });
        return json(res, 403, { message: 'Forbidden' });
      }
      if (body.user_code !== EKO.user_code) return declined(res, 'User not found', 463);
      const token = tokens.get(`${body.operator_id}:${body.utility_acc_no}`);
      if (token !== undefined && body.billfetchresponse !== token)
        return declined(res, 'billfetchresponse required');
      return money(req, res, String(body.utility_acc_no), false);
    }
    if (req.method === 'POST' && path === '/user/payment/fund-transfer') {
      if (String(body.client_ref_id).length >= 20) return declined(res, 'client_ref_id too long');
      return money(req, res, String(body.account), true);
    }
    if (req.method === 'GET' && path === '/customer/payment/bbps/bill') {
      const account = q.get('utility_acc_no') ?? '';
      if (account.endsWith('0000')) return declined(res, 'No bill due');
      const token = `bfr-${q.get('client_ref_id')}`;
      tokens.set(`${q.get('operator_id')}:${account}`, token);
      return json(res, 200, {
        status: 0,
        response_status_id: -1,
        message: 'Bill fetched',
        data: {
          amount: '845.50',
          utilitycustomername: 'ANIL SHARMA',
          duedate: '2026-12-05',
          billnumber: 'B-7741',
          billfetchresponse: token,
        },
      });
    }
    const operator = /^\/customer\/payment\/bbps\/recharge\/([0-9]{10})\/operator$/.exec(path);
    if (req.method === 'GET' && operator)
      return json(res, 200, {
        status: 0,
        response_status_id: -1,
        message: 'Operator found',
        dependent_params: [
          { name: 'phone_operator_code', value: '400' },
          { name: 'circle_area', value: '23' },
        ],
        data: { updates: '' },
        response_type_id: 1804,
      });
    const plans = /^\/customer\/payment\/bbps\/recharge\/([0-9]{10})\/operator\/plans$/.exec(path);
    if (req.method === 'GET' && plans) {
      if (q.get('phone_operator_code') !== '400' || q.get('circleid') !== '23')
        return json(res, 200, {
          response_status_id: 0,
          data: { message: 'Unable to fetch plans' },
          response_type_id: 1805,
          message: 'fail to fetch details',
          status: 0,
        });
      return json(res, 200, {
        response_status_id: 0,
        dependent_params: [
          {
            type_metadata: [
              {
                headers: [
                  { name: 'amount', value: 'price' },
                  { name: 'validity', value: 'validity' },
                  { name: 'plan_description', value: 'plan_description' },
                ],
                dependent_params: [{ name: 'amount', value: 'amount' }],
              },
            ],
            name: 'req_list',
            value: EKO_PLANS,
          },
        ],
        response_type_id: 1804,
        message: 'success',
        status: 0,
      });
    }
    if (
      req.method === 'POST' &&
      (path === '/tools/kyc/pan-basic' || path === '/tools/kyc/pan-lite')
    ) {
      const pan = String(body.pan_number ?? body.pan);
      if (pan.slice(5, 9) === '0000') return declined(res, 'Invalid PAN');
      const data =
        path === '/tools/kyc/pan-basic'
          ? {
              pan_number: pan,
              pan_returned_name: 'RAVI KUMAR',
              first_name: 'RAVI',
              last_name: 'KUMAR',
            }
          : {
              pan,
              name: body.name,
              dob: body.dob,
              name_match: String(body.name).toUpperCase() === 'RAVI KUMAR' ? 'Y' : 'N',
              dob_match: body.dob === '1980-02-01' ? 'Y' : 'N',
              pan_status: 'E',
              status: 'VALID',
              aadhaar_seeding_status: 'Y',
            };
      return json(res, 200, {
        status: 0,
        response_status_id: -1,
        message: 'PAN verification successful',
        data,
      });
    }
    if (req.method === 'POST' && path === '/tools/kyc/voter-id') {
      const epic = String(body.epic_number);
      if (epic.endsWith('0000')) return declined(res, 'Invalid EPIC number');
      return json(res, 200, {
        status: 0,
        response_status_id: 0,
        message: 'Voter ID Details Retrieved',
        data: { name: String(body.name ?? 'RAVI KUMAR').toUpperCase(), epic_number: epic },
      });
    }
    const customer = /^\/customers\/mobile_number:([0-9]{10})(\/otp)?$/.exec(path);
    if (customer) {
      const mobile = customer[1]!;
      const user = req.method === 'GET' ? q.get('user_code') : body.user_code;
      if (user !== EKO.user_code) return declined(res, 'User not found', 463);
      const known = customers.get(mobile);
      const sendOtp = () => {
        const otp = String(100_000 + ((Number(mobile.slice(-6)) + ++otp_serial) % 900_000));
        customer_otps.set(mobile, otp);
        return json(res, 200, {
          status: 0,
          response_status_id: -1,
          message: 'OTP sent to the customer',
          data: { customer_id: mobile, otp_ref_id: `ref${otp_serial}` },
        });
      };
      if (req.method === 'GET' && !customer[2])
        return known
          ? json(res, 200, {
              status: 0,
              response_status_id: 0,
              message: 'Customer found',
              data: { customer_id: mobile, name: known.name, state: known.verified ? '2' : '1' },
            })
          : declined(res, 'Customer not found', 463);
      if (req.method === 'PUT' && !customer[2]) {
        if (known) return declined(res, 'Customer already exists', 17);
        if (!body.name) return declined(res, 'name required');
        customers.set(mobile, { name: String(body.name), verified: false });
        return sendOtp();
      }
      if (req.method === 'POST' && customer[2])
        return known ? sendOtp() : declined(res, 'Customer not found', 463);
    }
    const recipient =
      /^\/customers\/mobile_number:([0-9]{10})\/recipients\/acc_ifsc:([0-9]{9,18})_([A-Z]{4}0[A-Z0-9]{6})$/.exec(
        path,
      );
    if (req.method === 'PUT' && recipient) {
      const [, mobile, account, ifsc] = recipient as unknown as [string, string, string, string];
      if (body.user_code !== EKO.user_code) return declined(res, 'User not found', 463);
      if (!customers.get(mobile)?.verified) return declined(res, 'Customer not verified', 463);
      if (body.recipient_type !== 3 || !body.recipient_name)
        return declined(res, 'recipient_name and recipient_type required');
      const key = `${mobile}:${account}_${ifsc}`;
      const existing = [...recipients.entries()].find(([, r]) => r.key === key);
      const id = existing?.[0] ?? String(10_000 + recipients.size + 1);
      recipients.set(id, { key, mobile, account, ifsc, name: String(body.recipient_name) });
      return json(res, 200, {
        status: 0,
        response_status_id: 0,
        message: 'Recipient added',
        data: { recipient_id: id, customer_id: mobile },
      });
    }
    if (req.method === 'POST' && path === '/transactions') {
      const payee = recipientOf(body.recipient_id);
      if (body.user_code !== EKO.user_code) return declined(res, 'User not found', 463);
      if (!payee || payee.mobile !== body.customer_id || !customers.get(payee.mobile)?.verified)
        return declined(res, 'Recipient not found for this customer');
      if (String(body.state) !== '1' || ![1, 2].includes(Number(body.channel)))
        return declined(res, 'state 1 and channel 1 or 2 required');
      return money(req, res, payee.account, true);
    }
    const verification = /^\/customers\/verification\/otp:([0-9]{4,8})$/.exec(path);
    if (req.method === 'PUT' && verification) {
      const mobile = String(body.id ?? '');
      const known = customers.get(mobile);
      if (body.id_type !== 'mobile_number' || !known)
        return declined(res, 'Customer not found', 463);
      if (customer_otps.get(mobile) !== verification[1]) return declined(res, 'Invalid OTP', 302);
      known.verified = true;
      customer_otps.delete(mobile);
      return json(res, 200, {
        status: 0,
        response_status_id: 0,
        message: 'Customer verified',
        data: { customer_id: mobile, state: '2' },
      });
    }
    const refund = /^\/transactions\/([0-9]+)\/refund(\/otp)?$/.exec(path);
    if (req.method === 'POST' && refund) {
      if (body.user_code !== EKO.user_code) return declined(res, 'User not found', 463);
      const tid = refund[1]!;
      const txn = [...txns.values()].find((t) => t.tid === tid);
      if (!txn || !isTransfer(txn) || txn.tx_status !== 3)
        return declined(res, 'Transaction is not eligible for refund');
      if (refund[2]) {
        const otp = String(100_000 + (Number(tid) % 900_000));
        refund_otps.set(tid, otp);
        return json(res, 200, {
          status: 0,
          response_status_id: -1,
          message: 'OTP for refund sent to the customer',
          data: { tid },
        });
      }
      if (String(body.state) !== '1' || body.otp !== refund_otps.get(tid))
        return declined(res, 'Invalid OTP', 303);
      txn.tx_status = 4;
      refund_otps.delete(tid);
      return json(res, 200, {
        status: 0,
        response_status_id: 0,
        message: 'Refund done',
        data: { tid, refunded_amount: String(txn.body.amount ?? ''), tx_status: '4' },
      });
    }
    const inquiry = /^\/tools\/reference\/transaction\/([A-Za-z0-9]+)$/.exec(path);
    if (req.method === 'GET' && inquiry) {
      const txn = txns.get(inquiry[1]!) ?? [...txns.values()].find((t) => t.tid === inquiry[1]);
      if (!txn) return declined(res, 'TID does not exist', 168);
      if (txn.tx_status === 2 || txn.tx_status === 5) {
        if (txn.awaited > 0) txn.awaited -= 1;
        else txn.tx_status = txn.final;
      }
      return json(res, 200, {
        status: 0,
        response_status_id: -1,
        message: DESC[txn.tx_status],
        data: answer(txn),
      });
    }
    return json(res, 404, { message: 'No mapping rule matched' });
  })) as EkoServer;
  server.txns = txns;
  server.refund_otps = refund_otps;
  server.customers = customers;
  server.customer_otps = customer_otps;
  server.refused = refused;
  server.sendCallback = (url, client_ref_id, override = {}) => {
    const txn = txns.get(client_ref_id);
    const payload = {
      ...(txn ? answer(txn) : {}),
      tx_status: txn?.tx_status ?? 0,
      txstatus_desc: DESC[txn?.tx_status ?? 0],
      client_ref_id,
      old_tx_status: 2,
      old_tx_status_desc: 'Initiated',
      timestamp: new Date(now()).toISOString().replace('T', ' ').slice(0, 19),
      ...override,
    };
    return fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(payload),
    });
  };
  return server;
}

const DESC: Record<number, string> = {
  0: 'Success',
  1: 'Fail',
  2: 'Response Awaited/Initiated',
  3: 'Refund Pending',
  4: 'Refunded',
  5: 'Hold',
};
