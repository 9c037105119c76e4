// Bill payment's rules: the biller and consumer number checks, bill fetch (a lookup through
// the providers' failover chain; no money moves; the answer checked and kept for
// `fetch_ttl_ms`), and payment (a payment of the one engine, with the biller's fee as
// charges and its commission; a fetched bill is claimed in the hold's commit, so it is paid
// once). The /api routes validate, call one of these and present the result.
import { randomBytes } from 'node:crypto';
import type { z } from 'zod';
import { ApiError, badRequest, conflict, notFound } from '../../http/errors.js';
import { lookup, lookupSignal } from '../lookups.js';
import type { Account } from '../../store/state.js';
import type { Tx } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import { type AmountError, microsToUnits, unitsToMicros } from '../../util/money.js';
import type { Biller } from './config.js';
import type { PaymentsContext } from '../context.js';
import type { Answer } from '../engine/engine.js';
import { requestHash } from '../engine/intent.js';
import type { fetchBody, payBody, validateBody } from './schemas.js';
import { mobileError, normalizeMobile } from '../identity/mobile.js';
import { parsePan } from '../identity/pan.js';
import { billFetchExpired, type FetchedBill } from '../engine/tables.js';
import { UNDONE_STATUSES } from '../engine/transactions.js';

const MAX_BILL_MICROS = 10_000_000 * 1_000_000;

type Ctx = Pick<
  PaymentsContext,
  'store' | 'settings' | 'engine' | 'clock' | 'providers' | 'onStop' | 'pricing'
>;

export interface BillsCommands {
  requireBiller(biller_id: string): Biller;
  fetch(
    account: Account,
    body: z.output<typeof fetchBody>,
  ): Promise<{ bill: FetchedBill; biller: Biller }>;
  /** A validate-and-pay biller's confirmation of the customer (kept as a bill without an amount). */
  validate(
    account: Account,
    body: z.output<typeof validateBody>,
  ): Promise<{ bill: FetchedBill; biller: Biller }>;
  pay(
    account: Account,
    body: z.output<typeof payBody>,
    idempotency_key: string | null,
    via?: Record<string, string | number>,
  ): Promise<Answer>;
}

export function billsCommands(ctx: Ctx): BillsCommands {
  const billers = new Map(ctx.settings.bills.billers.map((b) => [b.biller_id, b]));
  // Bill fetches in flight are cut short when the room stops.
  const signal = lookupSignal(ctx);
  const requireBiller = (biller_id: string): Biller => {
    const biller = billers.get(biller_id);
    if (!biller)
      throw badRequest(
        `biller_id: no biller ${biller_id}; GET /api/bills/billers lists them`,
        'biller_id',
        'unknown_biller',
      );
    return biller;
  };
  return {
    requireBiller,
    fetch: (account, body) => {
      const biller = requireBiller(body.biller_id);
      requireMode(biller, 'fetch_and_pay', 'fetch_not_supported');
      return fetchBill(ctx, signal, account, biller, body, 'bill');
    },
    validate: (account, body) => {
      const biller = requireBiller(body.biller_id);
      requireMode(biller, 'validate_and_pay', 'validation_not_supported');
      return fetchBill(ctx, signal, account, biller, body, 'validation');
    },
    pay: (account, body, idempotency_key, via) =>
      payBill(ctx, account, requireBiller(body.biller_id), body, idempotency_key, via),
  };
}

/** What each mode asks first: a fetch, a validation, or nothing. */
const FIRST_STEP: Record<Biller['mode'], string> = {
  fetch_and_pay: 'fetch the bill (POST /api/bills/fetch), then pay it by its bill_id',
  validate_and_pay:
    'validate the customer (POST /api/bills/validate), then pay naming the validation as bill_id',
  pay_directly: 'pay directly (POST /api/bills/pay): it has no bill to fetch',
};

function requireMode(biller: Biller, mode: Biller['mode'], code: string): void {
  if (biller.mode !== mode)
    throw badRequest(
      `biller_id: ${biller.name} is ${biller.mode.replaceAll('_', ' ')}: ${FIRST_STEP[biller.mode]}`,
      'biller_id',
      code,
    );
}

/**
 * The customer's parameters for the biller, each checked against its rule: from `params`
 * (by name), or from `consumer_number` alone (the biller's first parameter: requests from
 * before BBPS). Unknown names are refused; an optional parameter may be left out. The first
 * parameter is the customer's number at the biller (the transaction's subject).
 */
export function customerParams(
  biller: Biller,
  body: { consumer_number?: string | undefined; params?: Record<string, string> | undefined },
): { params: Record<string, string>; subject: string } {
  const given: Record<string, string> = Object.create(null) as Record<string, string>;
  if (body.params) Object.assign(given, body.params);
  const first = biller.params[0]!;
  if (body.consumer_number !== undefined) {
    if (given[first.name] !== undefined && given[first.name] !== body.consumer_number)
      throw badRequest(
        `consumer_number: it is ${first.name}, given twice with different values`,
        'consumer_number',
        'invalid_value',
      );
    given[first.name] = body.consumer_number;
  }
  for (const name of Object.keys(given))
    if (!biller.params.some((param) => param.name === name))
      throw badRequest(
        `params.${name}: ${biller.name} takes ${biller.params.map((param) => param.name).join(', ')}`,
        `params.${name}`,
        'unknown_param',
      );
  const params: Record<string, string> = {};
  for (const param of biller.params) {
    const value = given[param.name];
    // The first parameter answers to `consumer_number` when the request gave it so (before BBPS).
    const field =
      param === first && (body.consumer_number !== undefined || body.params === undefined)
        ? 'consumer_number'
        : `params.${param.name}`;
    if (value === undefined || value === '') {
      if (param.optional) continue;
      throw badRequest(
        `${field}: ${param.label} is required for ${biller.name}`,
        field,
        'missing_param',
      );
    }
    if (!new RegExp(param.regex).test(value))
      throw badRequest(
        field === 'consumer_number'
          ? `consumer_number: not a valid ${param.label} for ${biller.name}`
          : `${field}: not a valid ${param.label} for ${biller.name}`,
        field,
        field === 'consumer_number' ? 'invalid_consumer_number' : 'invalid_param',
      );
    params[param.name] = value;
  }
  return { params, subject: params[first.name]! };
}

async function fetchBill(
  ctx: Ctx,
  signal: AbortSignal,
  account: Account,
  biller: Biller,
  body: z.output<typeof fetchBody>,
  kind: 'bill' | 'validation',
): Promise<{ bill: FetchedBill; biller: Biller }> {
  const { store, settings } = ctx;
  const { params, subject } = customerParams(biller, body);
  if (body.customer_mobile !== undefined) customerMobile(body.customer_mobile);
  const found = await lookup(
    ctx,
    signal,
    {
      service: 'bills',
      kind: kind === 'bill' ? 'bill' : 'validate',
      subject,
      params: { biller_id: biller.biller_id, category: biller.category, ...params },
    },
    {
      not_found_code: kind === 'bill' ? 'bill_not_found' : 'customer_not_found',
      prefix: `${biller.name}: `,
      unavailable:
        kind === 'bill'
          ? 'no biller provider could fetch the bill'
          : 'no biller provider could validate the customer',
    },
  );
  const data = found.data;
  const amount_micros = kind === 'bill' ? billAmount(found.provider, data) : 0;
  const text = (value: unknown, max: number) =>
    typeof value === 'string' || typeof value === 'number' ? String(value).slice(0, max) : null;
  const bill = await store.transact((tx) => {
    const now_ms = tx.now.getTime();
    // Expired fetches are deleted by the pruning pass (payments/engine/prune.ts), not here.
    const fetched: FetchedBill = {
      id: newId('bill'),
      account_id: account.id,
      biller_id: biller.biller_id,
      consumer_number: subject,
      customer_name: text(data.customer_name, 120) ?? '',
      amount_micros,
      due_date: text(data.due_date, 32),
      bill_date: text(data.bill_date, 32),
      bill_number: text(data.bill_number, 64),
      bill_period: text(data.bill_period, 32),
      provider: found.provider,
      fetched_at: tx.now.toISOString(),
      expires_at: new Date(now_ms + settings.bills.fetch_ttl_ms).toISOString(),
      paid_txn_id: null,
      kind,
      params,
    };
    tx.set('bill_fetches', fetched.id, fetched);
    return fetched;
  });
  return { bill, biller };
}

/** A customer's mobile number as BBPS wants it: ten digits (a +91 or 0 prefix and spaces dropped). */
function customerMobile(raw: string): string {
  const mobile = normalizeMobile(raw);
  const error = mobileError(mobile);
  if (error) throw badRequest(`customer_mobile: ${error}`, 'customer_mobile', 'invalid_mobile');
  return mobile;
}

/** The fetched bill's amount in micro-units; a provider's bad amount is a 502, not a bill. */
function billAmount(provider: string, data: Record<string, string | number>): number {
  let amount_micros: number;
  try {
    amount_micros = unitsToMicros(
      typeof data.amount === 'string' ? Number(data.amount) : (data.amount ?? Number.NaN),
      2,
    );
  } catch (error) {
    throw new ApiError(
      502,
      'bad_provider_answer',
      `${provider} gave a bill amount that is not an amount (${(error as AmountError).message})`,
    );
  }
  if (amount_micros <= 0 || amount_micros > MAX_BILL_MICROS)
    throw new ApiError(502, 'bad_provider_answer', `${provider} gave a bill amount out of range`);
  return amount_micros;
}

/**
 * What a payment carries of the customer, whatever door or shape it came through: the mobile
 * (NPCI asks every BBPS payment for it), the PAN from `pan_from_amount` on (the Income-tax
 * Act's and RBI's rule for cash above the threshold); whatever is given is checked.
 */
function customerDetails(
  ctx: Ctx,
  body: z.output<typeof payBody>,
): { customer_mobile: string | null; customer_pan: string | null } {
  const rules = ctx.settings.bills;
  if (body.customer_mobile === undefined)
    throw badRequest(
      "customer_mobile: BBPS asks every payment for the customer's mobile number",
      'customer_mobile',
      'missing_param',
    );
  const customer_mobile = customerMobile(body.customer_mobile);
  let customer_pan: string | null = null;
  if (body.customer_pan !== undefined) {
    const parsed = parsePan(body.customer_pan);
    if ('error' in parsed)
      throw badRequest(`customer_pan: ${parsed.error}`, 'customer_pan', 'invalid_pan');
    customer_pan = parsed.pan;
  }
  if (customer_pan === null && body.amount >= rules.pan_from_amount)
    throw badRequest(
      `customer_pan: BBPS asks for the customer's PAN on a payment of ${microsToUnits(rules.pan_from_amount)} or more`,
      'customer_pan',
      'pan_required',
    );
  return { customer_mobile, customer_pan };
}

/**
 * The request shape from before BBPS, `consumer_number` without `params`, on the /api doors:
 * refused unless `payments.bills.allow_legacy_requests` is on. True when the request is in it
 * (and it is allowed): its answer then carries the deprecation headers (`LEGACY_HEADERS`).
 * The shape is only a way of naming the customer: every rule applies to it as to the current one.
 */
export function legacyShape(
  settings: Ctx['settings'],
  biller_id: string,
  body: { consumer_number?: string | undefined; params?: unknown },
): boolean {
  if (body.consumer_number === undefined) return false;
  if (settings.bills.allow_legacy_requests) return true;
  const first = settings.bills.billers.find((b) => b.biller_id === biller_id)?.params[0]?.name;
  throw badRequest(
    `consumer_number: the request shape from before BBPS is switched off on this gateway; name the customer by the biller's parameters, params: {"${first ?? 'consumer_number'}": "…"} (GET /api/bills/billers lists them)`,
    'consumer_number',
    'legacy_request_shape',
  );
}

/**
 * The date the shape from before BBPS is switched off for good (the setting goes with it):
 * sent as `Sunset` (RFC 8594), beside `Deprecation` (RFC 9745: since when it is deprecated).
 */
export const LEGACY_DEPRECATED_AT = '2026-12-07T00:00:00Z';
export const LEGACY_SUNSET = '2027-06-30T23:59:59Z';
export const LEGACY_HEADERS: Readonly<Record<string, string>> = {
  Deprecation: `@${Date.parse(LEGACY_DEPRECATED_AT) / 1000}`,
  Sunset: new Date(LEGACY_SUNSET).toUTCString(),
};

/** Whether the mode lets a payment go without (or with) a bill_id. */
function requireBillIdForMode(biller: Biller, bill_id: string | undefined): void {
  if (bill_id === undefined && biller.fetch_required)
    throw badRequest(
      `bill_id: ${biller.name} is fetch and pay: ${FIRST_STEP.fetch_and_pay}`,
      'bill_id',
      'fetch_required',
    );
  if (bill_id === undefined && biller.mode === 'validate_and_pay')
    throw badRequest(
      `bill_id: ${biller.name} is validate and pay: ${FIRST_STEP.validate_and_pay}`,
      'bill_id',
      'validation_required',
    );
  if (bill_id !== undefined && biller.mode === 'pay_directly')
    throw badRequest(
      `bill_id: ${biller.name} is paid directly; it has no bill to name`,
      'bill_id',
      'invalid_value',
    );
}

async function payBill(
  ctx: Ctx,
  account: Account,
  biller: Biller,
  body: z.output<typeof payBody>,
  idempotency_key: string | null,
  via: Record<string, string | number> = {},
): Promise<Answer> {
  const { store, engine } = ctx;
  const { params, subject } = customerParams(biller, body);
  if (body.amount < biller.min_amount || body.amount > biller.max_amount) {
    throw badRequest(
      `amount: must be between ${microsToUnits(biller.min_amount)} and ${microsToUnits(biller.max_amount)} for ${biller.name}`,
      'amount',
      'amount_out_of_range',
    );
  }
  requireBillIdForMode(biller, body.bill_id);
  const { customer_mobile, customer_pan } = customerDetails(ctx, body);
  // The fetched bill, for the payment's details. Whether it may be paid is decided in the
  // payment's own transaction (`reserve` below), after the idempotency lookup: a retry of a
  // payment gets its first answer even once the bill has expired or been pruned.
  const bill_id = body.bill_id;
  let bill: FetchedBill | undefined;
  if (bill_id) {
    const found = await store.fetch('bill_fetches', bill_id);
    if (found?.account_id === account.id) bill = found;
  }
  return engine.submit({
    account,
    service: 'bills',
    idempotency_key,
    client_ref: body.client_ref ?? null,
    request_hash: requestHash('bills-pay', {
      biller_id: biller.biller_id,
      consumer_number: subject,
      ...(body.params ? { params } : {}),
      amount_micros: body.amount,
      bill_id: bill_id ?? null,
      ...(customer_mobile ? { customer_mobile } : {}),
      ...(customer_pan ? { customer_pan } : {}),
      client_ref: body.client_ref ?? null,
      allow_duplicate: body.allow_duplicate ?? false,
      ...via,
    }),
    allow_duplicate: body.allow_duplicate ?? false,
    amount_micros: body.amount,
    charges_micros: biller.fee,
    ...billQuote(ctx, account, biller, body.amount),
    pay_to: 'provider:bills',
    subject,
    details: paymentDetails(biller, params, { customer_mobile, customer_pan }, bill, via),
    provider_params: {
      biller_id: biller.biller_id,
      category: biller.category,
      ...params,
      ...(customer_mobile ? { customer_mobile } : {}),
      ...(bill?.bill_number ? { bill_number: bill.bill_number } : {}),
      ...(bill ? { bill_id: bill.id } : {}),
    },
    reserve: bill_id
      ? (tx, txn_id) => reserveBill(ctx, tx, { account, biller, body, subject, bill_id, txn_id })
      : undefined,
  });
}

/** What the payment's transaction keeps: the biller, the customer (its further parameters as `param_<name>`), the bill. */
function paymentDetails(
  biller: Biller,
  params: Record<string, string>,
  customer: { customer_mobile: string | null; customer_pan: string | null },
  bill: FetchedBill | undefined,
  via: Record<string, string | number>,
): Record<string, string | number> {
  const { customer_mobile, customer_pan } = customer;
  return {
    kind: 'bill_payment',
    biller_id: biller.biller_id,
    biller: biller.name,
    category: biller.category,
    receipt_token: randomBytes(16).toString('hex'),
    channel: 'AGT',
    payment_mode: 'Cash',
    ...(customer_mobile ? { customer_mobile } : {}),
    ...(customer_pan ? { customer_pan } : {}),
    ...Object.fromEntries(
      Object.entries(params)
        .slice(1)
        .map(([name, value]) => [`param_${name}`, value]),
    ),
    ...(bill
      ? {
          bill_id: bill.id,
          customer_name: bill.customer_name,
          ...(bill.amount_micros > 0 ? { bill_amount: microsToUnits(bill.amount_micros) } : {}),
          ...(bill.bill_number ? { bill_number: bill.bill_number } : {}),
          ...(bill.due_date ? { due_date: bill.due_date } : {}),
        }
      : {}),
    ...via,
  };
}

/** The payment's commission (by the account's scheme, per biller) and the GST in the biller's fee. */
function billQuote(ctx: Ctx, account: Account, biller: Biller, amount_micros: number) {
  return ctx.pricing.quote(ctx.store, {
    account_id: account.id,
    service: 'bills',
    operator: biller.biller_id,
    amount_micros,
    fee_micros: biller.fee,
  });
}

/** In the payment's commit: the fetched bill is this account's, fresh, for this biller and consumer, unpaid; claim it. */
function reserveBill(
  ctx: Ctx,
  tx: Tx,
  claim: {
    account: Account;
    biller: Biller;
    body: z.output<typeof payBody>;
    subject: string;
    bill_id: string;
    txn_id: string;
  },
): void {
  const { account, biller, body, subject, bill_id, txn_id } = claim;
  const settings = ctx.settings;
  const current = tx.get('bill_fetches', bill_id);
  if (!current || current.account_id !== account.id) {
    throw notFound(
      `no fetched bill ${bill_id} (a bill can be paid by id for ${duration(settings.bills.fetch_ttl_ms)} after its fetch; fetch it again)`,
      'bill_not_found',
    );
  }
  if (billFetchExpired(current, tx.now.getTime()))
    throw new ApiError(
      422,
      'bill_expired',
      `bill ${bill_id} has expired; fetch it again`,
      'bill_id',
    );
  if (current.biller_id !== biller.biller_id || current.consumer_number !== subject) {
    throw badRequest(
      `bill_id: bill ${current.id} is for ${current.biller_id} ${current.consumer_number}, not ${biller.biller_id} ${subject}`,
      'bill_id',
      'bill_mismatch',
    );
  }
  if (current.kind !== 'validation') amountAgainstBill(biller, body.amount, current.amount_micros);
  const prior = current.paid_txn_id ? tx.get('payment_txns', current.paid_txn_id) : undefined;
  if (prior && !UNDONE_STATUSES.has(prior.status))
    throw conflict(
      `bill ${bill_id} is already paid (${prior.id}, ${prior.status})`,
      'bill_already_paid',
      'bill_id',
    );
  tx.set('bill_fetches', bill_id, { ...current, paid_txn_id: txn_id });
}

/**
 * The biller's amount rule against the fetched bill: EXACT, EXACT_AND_ABOVE, EXACT_AND_BELOW,
 * ANY; `partial_pay` allows less than the bill whatever the rule. 422 `amount_mismatch` otherwise.
 */
export function amountAgainstBill(
  biller: Biller,
  amount_micros: number,
  bill_micros: number,
): void {
  const rule = biller.amount_rule;
  const below_ok = rule === 'EXACT_AND_BELOW' || rule === 'ANY' || biller.partial_pay;
  const above_ok = rule === 'EXACT_AND_ABOVE' || rule === 'ANY';
  if ((amount_micros < bill_micros && !below_ok) || (amount_micros > bill_micros && !above_ok)) {
    const bill = microsToUnits(bill_micros);
    const takes =
      rule === 'EXACT' && !biller.partial_pay
        ? `the exact bill amount, ${bill}`
        : rule === 'EXACT_AND_ABOVE' && !biller.partial_pay
          ? `the bill amount, ${bill}, or more`
          : rule === 'EXACT_AND_ABOVE'
            ? `any amount (partial payment allowed) of the bill, ${bill}, or more`
            : `the bill amount, ${bill}, or less`;
    throw new ApiError(422, 'amount_mismatch', `amount: ${biller.name} takes ${takes}`, 'amount');
  }
}

/** 86400000 → "24 h", 90000 → "2 min", 1500 → "2 s". */
function duration(ms: number): string {
  if (ms >= 3_600_000) return `${Math.round(ms / 3_600_000)} h`;
  if (ms >= 60_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 1000)} s`;
}
