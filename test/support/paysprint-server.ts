// A scripted PaySprint on loopback, built from PaySprint's API reference (a third party the
// tests cannot reach). Every request's auth is checked as PaySprint documents it: the
// `Authorisedkey` header, and a JWT in `Token` signed HS256 with the partner's JWT secret over
// {timestamp (seconds), partnerId, reqid}; a stale timestamp, a wrong signature or a reused
// reqid is refused with 401. Bodies of the services named in `encrypted` must be
// {"body": base64(AES-128-CBC(json))} and are decrypted with the partner's key and IV.
// Outcomes are chosen by the subject's last four digits, like the sandbox's:
//   0001 declined · 0002 pending, then success on enquiry · 0003 pending, then failed ·
//   0004 taken but never answered (timeout), success on enquiry · 0005 "duplicate reference"
//   (an earlier attempt went through) · 0006 HTTP 503 after taking it, success on enquiry ·
//   anything else success. A bill for a consumer ending 9999 is not found.
// The recharge lookups (PaySprint's "HLR API", `recharge/hlrapi/*`, which name operators and
// circles by name): hlrcheck {number, type: "mobile"} → info {operator, circle} (a number
// ending 0000 is not found); browseplan {circle, op} → info {<category>: [{rs, desc,
// validity}]} for Airtel in Delhi NCR, response_code 0 for anything else; dthinfo {canumber,
// op} → info [{customerName, Balance, ...}] for TataSky (a number ending 9999 not found).
// A bill's further parameters arrive as ad1..ad3 (`accepted` shows them); a PAN checked with
// a name and date of birth answers the holder's name and date of birth. Answers of the
// services in `encrypted_answers` are sent as {"body": base64(AES-128-CBC(json))}.
// The JWT and AES here are written with node:crypto directly, not with the adapter's code,
// so the server checks the adapter rather than agreeing with it.
import { createCipheriv, createDecipheriv, createHmac, timingSafeEqual } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { json as plainJson, startUpstream, type Seen, type Upstream } from './payments-upstream.ts';

export interface PaysprintSecrets {
  partner_id: string;
  jwt_secret: string;
  authorised_key: string;
  aes_key: string;
  aes_iv: string;
}

export interface PaysprintServer extends Upstream {
  /** referenceid → the transaction as PaySprint holds it. */
  txns: Map<string, { status: string; service: string; subject: string; ackno: string }>;
  /** Each refused request's reason. */
  refusals: string[];
  /** The decrypted (or plain) JSON of each accepted request, with its path. */
  accepted: Array<{ path: string; body: any }>;
  /** referenceid → the refund OTP PaySprint sent the remitter. */
  refund_otps: Map<string, string>;
  /** Remitters PaySprint has onboarded (mobile → name). */
  remitters: Map<string, { fname: string; lname: string }>;
}

const PREFIX = '/api/v1/service';
const STATUS_PATHS: Record<string, string> = {
  '/recharge/recharge/status': 'recharge',
  '/bill-payment/bill/status': 'bills',
  '/dmt/transact/transact/querytransaction': 'dmt',
  '/pan/status': 'pan',
};
const SERVICE_OF: Record<string, string> = {
  recharge: 'recharge',
  'bill-payment': 'bills',
  dmt: 'dmt',
  pan: 'pan',
};

function verifyJwt(token: string, secrets: PaysprintSecrets): Record<string, unknown> | string {
  const [head, payload, signature, extra] = token.split('.');
  if (!head || !payload || !signature || extra !== undefined) return 'malformed token';
  const expected = createHmac('sha256', secrets.jwt_secret)
    .update(`${head}.${payload}`)
    .digest('base64')
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
  const a = Buffer.from(signature);
  const b = Buffer.from(expected);
  if (a.length !== b.length || !timingSafeEqual(a, b)) return 'wrong signature';
  const header = JSON.parse(Buffer.from(head, 'base64').toString('utf8'));
  if (header.alg !== 'HS256') return 'not HS256';
  return JSON.parse(Buffer.from(payload, 'base64').toString('utf8'));
}

export async function startPaysprint(
  secrets: PaysprintSecrets,
  options: { encrypted?: string[]; encrypted_answers?: string[]; max_age_s?: number } = {},
): Promise<PaysprintServer> {
  const encrypted = new Set(options.encrypted ?? []);
  const encrypted_answers = new Set(options.encrypted_answers ?? []);
  /** Answers to be sent encrypted (their service's). */
  const sealed = new WeakSet<ServerResponse>();
  const json = (res: ServerResponse, status: number, body: unknown) => {
    if (!sealed.has(res) || status >= 500) return plainJson(res, status, body);
    const cipher = createCipheriv(
      'aes-128-cbc',
      Buffer.from(secrets.aes_key),
      Buffer.from(secrets.aes_iv),
    );
    const text = Buffer.concat([
      cipher.update(JSON.stringify(body), 'utf8'),
      cipher.final(),
    ]).toString('base64');
    return plainJson(res, status, { body: text });
  };
  const max_age_s = options.max_age_s ?? 300;
  const reqids = new Set<string>();
  const txns: PaysprintServer['txns'] = new Map();
  const refusals: string[] = [];
  const accepted: PaysprintServer['accepted'] = [];
  const remitters: PaysprintServer['remitters'] = new Map();
  const beneficiaries = new Map<string, string>();
  const refund_otps = new Map<string, string>();
  let counter = 0;

  const refuse = (res: ServerResponse, reason: string) => {
    refusals.push(reason);
    json(res, 401, {
      status: false,
      response_code: 10,
      message: `Un authorised request: ${reason}`,
    });
  };

  const script = (req: Seen, res: ServerResponse) => {
    if (req.headers.authorisedkey !== secrets.authorised_key) return refuse(res, 'Authorisedkey');
    const token = req.headers.token;
    if (typeof token !== 'string') return refuse(res, 'no Token');
    const claims = verifyJwt(token, secrets);
    if (typeof claims === 'string') return refuse(res, claims);
    if (claims.partnerId !== secrets.partner_id) return refuse(res, 'partnerId');
    const age = Math.floor(Date.now() / 1000) - Number(claims.timestamp);
    if (!Number.isInteger(claims.timestamp) || Math.abs(age) > max_age_s)
      return refuse(res, 'stale timestamp');
    const reqid = String(claims.reqid ?? '');
    if (!/^\d{1,40}$/.test(reqid)) return refuse(res, 'reqid');
    if (reqids.has(reqid)) return refuse(res, 'reused reqid');
    reqids.add(reqid);

    const path = req.url.startsWith(PREFIX) ? req.url.slice(PREFIX.length) : req.url;
    const service = SERVICE_OF[path.split('/')[1] ?? ''] ?? 'unknown';
    let body: any = req.json ?? {};
    if (encrypted.has(service)) {
      if (typeof body.body !== 'string' || Object.keys(body).length !== 1)
        return json(res, 400, {
          status: false,
          response_code: 11,
          message: 'body must be encrypted',
        });
      const decipher = createDecipheriv(
        'aes-128-cbc',
        Buffer.from(secrets.aes_key),
        Buffer.from(secrets.aes_iv),
      );
      body = JSON.parse(
        Buffer.concat([
          decipher.update(Buffer.from(body.body, 'base64')),
          decipher.final(),
        ]).toString('utf8'),
      );
    }
    accepted.push({ path, body });
    if (encrypted_answers.has(service)) sealed.add(res);
    return answer(path, service, body, res);
  };

  const take = (service: string, ref: string, subject: string, status: string) => {
    const ackno = `AK${String(++counter).padStart(6, '0')}`;
    txns.set(ref, { status, service, subject, ackno });
    return ackno;
  };

  function pay(service: string, body: any, subject: string, res: ServerResponse, extra: object) {
    const ref = String(body.referenceid ?? '');
    if (!ref)
      return json(res, 200, { status: false, response_code: 0, message: 'referenceid required' });
    if (txns.has(ref))
      return json(res, 200, {
        status: false,
        response_code: 12,
        message: 'Duplicate reference id',
      });
    const last = subject.slice(-4);
    switch (last) {
      case '0001':
        take(service, ref, subject, '0');
        return json(res, 200, {
          status: false,
          response_code: 0,
          message: 'Transaction failed at operator',
        });
      case '0002':
      case '0003': {
        const ackno = take(service, ref, subject, last === '0002' ? 'P:1' : 'P:0');
        return json(res, 200, {
          status: true,
          response_code: 2,
          ackno,
          message: 'Transaction pending',
        });
      }
      case '0004':
        take(service, ref, subject, '1');
        return; // taken, never answered: the caller times out
      case '0005':
        // An earlier attempt with this reference went through; this one is a duplicate.
        take(service, ref, subject, '1');
        return json(res, 200, {
          status: false,
          response_code: 12,
          message: 'Duplicate reference id',
        });
      case '0006':
        take(service, ref, subject, '1');
        return json(res, 503, { message: 'Service Unavailable' });
      default: {
        const ackno = take(service, ref, subject, '1');
        return json(res, 200, {
          status: true,
          response_code: 1,
          ackno,
          message: 'Transaction Successful',
          ...extra,
        });
      }
    }
  }

  function answer(path: string, service: string, body: any, res: ServerResponse) {
    const status_service = STATUS_PATHS[path];
    if (status_service) {
      const txn = txns.get(String(body.referenceid ?? ''));
      if (!txn || txn.service !== status_service)
        return json(res, 200, { status: false, response_code: 13, message: 'No record found' });
      // A pending one settles on its first enquiry ("P:1" → 1, "P:0" → 0).
      const shown = txn.status.startsWith('P:') ? '2' : txn.status;
      if (txn.status.startsWith('P:')) txn.status = txn.status.slice(2);
      return json(res, 200, {
        status: true,
        response_code: 1,
        message: 'Transaction Enquiry',
        data: {
          status: shown,
          ackno: txn.ackno,
          referenceid: body.referenceid,
          operatorid: `OP${txn.ackno}`,
          utr: `UTR${txn.ackno}`,
        },
      });
    }
    switch (path) {
      case '/recharge/recharge/dorecharge':
        if (!body.operator || !body.canumber || !(Number(body.amount) > 0))
          return json(res, 200, {
            status: false,
            response_code: 0,
            message: 'operator, canumber and amount required',
          });
        return pay('recharge', body, String(body.canumber), res, {
          operatorid: `OP-${body.canumber}`,
        });
      case '/bill-payment/bill/fetchbill': {
        const canumber = String(body.canumber ?? '');
        if (body.mode !== 'online' || !body.operator)
          return json(res, 200, {
            status: false,
            response_code: 0,
            message: 'operator and mode required',
          });
        if (canumber.endsWith('9999'))
          return json(res, 200, { status: false, response_code: 0, message: 'Bill not found' });
        return json(res, 200, {
          status: true,
          response_code: 1,
          name: 'Anil Sharma',
          amount: '845.50',
          duedate: '2026-12-05',
          message: 'Bill Fetched Success.',
          bill_fetch: {
            billAmount: '845.50',
            billnetamount: '845.50',
            billdate: '2026-11-20',
            dueDate: '2026-12-05',
            acceptPayment: true,
            acceptPartPay: false,
            cellNumber: canumber,
            userName: 'Anil Sharma',
            billnumber: 'B-7741',
          },
        });
      }
      case '/bill-payment/bill/paybill':
        if (
          !body.latitude ||
          !body.longitude ||
          !body.bill_fetch ||
          body.bill_fetch.billnetamount === undefined
        )
          return json(res, 200, {
            status: false,
            response_code: 0,
            message: 'latitude, longitude and bill_fetch required',
          });
        return pay('bills', body, String(body.canumber), res, {
          operatorid: `BLR${body.referenceid.slice(-8)}`,
        });
      case '/dmt/remitter/queryremitter': {
        const remitter = remitters.get(String(body.mobile));
        return remitter
          ? json(res, 200, {
              status: true,
              response_code: 1,
              message: 'Remitter found',
              data: { ...remitter, mobile: body.mobile },
            })
          : json(res, 200, { status: false, response_code: 0, message: 'Remitter not registered' });
      }
      case '/dmt/beneficiary/registerbeneficiary': {
        if (!remitters.has(String(body.mobile)))
          return json(res, 200, {
            status: false,
            response_code: 0,
            message: 'Remitter not registered',
          });
        const key = `${body.mobile}:${body.accno}:${body.ifsccode}`;
        const id = beneficiaries.get(key) ?? `B${beneficiaries.size + 1}`;
        beneficiaries.set(key, id);
        return json(res, 200, {
          status: true,
          response_code: 1,
          message: 'Beneficiary added',
          data: { bene_id: id },
        });
      }
      case '/dmt/beneficiary/registerbeneficiary/benenameverify':
        return pay('dmt', body, String(body.accno), res, {
          benename: String(body.benename).toUpperCase(),
          utr: 'PD000001',
        });
      case '/dmt/transact/transact':
        if (
          ![...beneficiaries.values()].includes(String(body.bene_id)) ||
          !['IMPS', 'NEFT'].includes(body.txntype) ||
          !body.pipe
        )
          return json(res, 200, {
            status: false,
            response_code: 0,
            message: 'bene_id, txntype and pipe required',
          });
        return pay(
          'dmt',
          body,
          [...beneficiaries.entries()].find(([, id]) => id === body.bene_id)![0].split(':')[1]!,
          res,
          {
            utr: `UTR${body.referenceid.slice(-8)}`,
            benename: 'SUNITA RAO',
          },
        );
      case '/dmt/refund/refund/resendotp': {
        const txn = txns.get(String(body.referenceid ?? ''));
        if (!txn || txn.service !== 'dmt' || txn.status !== '0' || txn.ackno !== body.ackno)
          return json(res, 200, { status: false, response_code: 0, message: 'Not refundable' });
        const otp = String(100_000 + ++counter);
        refund_otps.set(String(body.referenceid), otp);
        return json(res, 200, {
          status: true,
          response_code: 1,
          message: 'OTP sent to the remitter',
        });
      }
      case '/dmt/refund/refund/': {
        const ref = String(body.referenceid ?? '');
        const txn = txns.get(ref);
        if (
          !txn ||
          txn.status !== '0' ||
          !refund_otps.has(ref) ||
          refund_otps.get(ref) !== body.otp
        )
          return json(res, 200, { status: false, response_code: 0, message: 'Invalid OTP' });
        txn.status = 'R';
        refund_otps.delete(ref);
        return json(res, 200, { status: true, response_code: 1, message: 'Refund claimed' });
      }
      case '/pan/verify':
        if (!/^[A-Z]{5}\d{4}[A-Z]$/.test(String(body.pannumber)))
          return json(res, 200, { status: false, response_code: 0, message: 'invalid PAN' });
        return pay('pan', body, String(body.pannumber).slice(0, 9), res, {
          data: {
            full_name: 'RAVI KUMAR',
            pan_status: 'VALID',
            ...(body.name !== undefined || body.dob !== undefined ? { dob: '19/05/1983' } : {}),
          },
        });
      case '/recharge/hlrapi/hlrcheck': {
        const number = String(body.number ?? '');
        if (body.type !== 'mobile' || !/^[6-9]\d{9}$/.test(number))
          return json(res, 200, { status: false, response_code: 0, message: 'invalid number' });
        if (number.endsWith('0000'))
          return json(res, 200, { status: false, response_code: 0, message: 'Number not found' });
        return json(res, 200, {
          status: true,
          response_code: 1,
          info: { operator: 'Airtel', circle: 'Delhi NCR' },
          message: 'Fetch Successful',
        });
      }
      case '/recharge/hlrapi/browseplan':
        if (body.op !== 'Airtel' || body.circle !== 'Delhi NCR')
          return json(res, 200, { status: false, response_code: 0, message: 'Plan not found' });
        return json(res, 200, {
          status: true,
          response_code: 1,
          info: {
            FULLTT: [{ rs: 10, desc: 'Talktime 7.47', validity: 'NA', last_update: '01-12-2026' }],
            DATA: [
              { rs: 299, desc: '1.5GB/day, unlimited calls', validity: '28 days' },
              { rs: '719', desc: '1.5GB/day, unlimited calls', validity: '84 days' },
            ],
          },
          message: 'Plan Fetched',
        });
      case '/recharge/hlrapi/dthinfo': {
        const canumber = String(body.canumber ?? '');
        if (body.op !== 'TataSky' || !canumber)
          return json(res, 200, { status: false, response_code: 0, message: 'invalid operator' });
        if (canumber.endsWith('9999'))
          return json(res, 200, { status: false, response_code: 0, message: 'No record found' });
        return json(res, 200, {
          status: true,
          response_code: 1,
          info: [
            {
              customerName: 'Meena Iyer',
              Balance: '152.50',
              MonthlyRecharge: '399',
              NextRechargeDate: '2026-12-20',
              planname: 'Family HD',
              status: 'Active',
            },
          ],
          message: 'Fetch Successful',
        });
      }
      default:
        return json(res, 404, { status: false, response_code: 0, message: 'no such endpoint' });
    }
  }

  const upstream = await startUpstream(script);
  return Object.assign(upstream, { txns, refusals, accepted, remitters, refund_otps });
}

/** A token as PaySprint signs one (for callbacks, and to replay or age one in a test). */
export function paysprintToken(
  secrets: PaysprintSecrets,
  claims: { timestamp?: number; reqid?: string; partnerId?: string } = {},
  secret = secrets.jwt_secret,
): string {
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const head = b64({ typ: 'JWT', alg: 'HS256' });
  const payload = b64({
    timestamp: claims.timestamp ?? Math.floor(Date.now() / 1000),
    partnerId: claims.partnerId ?? secrets.partner_id,
    reqid: claims.reqid ?? String(Date.now()) + String(Math.floor(Math.random() * 1e9)),
  });
  const signature = createHmac('sha256', secret).update(`${head}.${payload}`).digest('base64url');
  return `${head}.${payload}.${signature}`;
}
