// Bill payment's rules: the biller and consumer number checks, bill fetch (a lookup through
// the providers' failover chain; no money moves; the answer checked and kept for
// `fetch_ttl_ms`), and payment (a payment of the one engine, with the biller's fee as
// charges and its commission; a fetched bill is claimed in the hold's commit, so it is paid
// once). The /api routes validate, call one of these and present the result.
import { randomBytes } from 'node:crypto';
import type { z } from 'zod';
import { ApiError, badRequest, conflict, notFound } from '../../http/errors.js';
import { ChainAbortedError, runLookupChain } from '../../providers/chain.js';
import type { Account } from '../../store/state.js';
import type { Tx } from '../../store/store.js';
import { newId } from '../../util/ids.js';
import { type AmountError, microsToUnits, unitsToMicros } from '../../util/money.js';
import type { Biller } from '../config.js';
import type { PaymentsContext } from '../context.js';
import type { Answer } from '../engine/engine.js';
import { requestHash } from '../engine/intent.js';
import type { fetchBody, payBody } from './schemas.js';
import { billFetchExpired, type FetchedBill } from '../engine/tables.js';

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
  pay(
    account: Account,
    body: z.output<typeof payBody>,
    idempotency_key: string | null,
  ): Promise<Answer>;
}

export function billsCommands(ctx: Ctx): BillsCommands {
  const billers = new Map(ctx.settings.bills.billers.map((b) => [b.biller_id, b]));
  // Bill fetches in flight are cut short when the room stops.
  const shutdown = new AbortController();
  ctx.onStop(() => shutdown.abort());
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
    fetch: (account, body) =>
      fetchBill(ctx, shutdown.signal, account, requireBiller(body.biller_id), body),
    pay: (account, body, idempotency_key) =>
      payBill(ctx, account, requireBiller(body.biller_id), body, idempotency_key),
  };
}

function requireConsumer(biller: Biller, consumer_number: string): void {
  if (!new RegExp(biller.consumer_pattern).test(consumer_number)) {
    throw badRequest(
      `consumer_number: not a valid ${biller.consumer_label} for ${biller.name}`,
      'consumer_number',
      'invalid_consumer_number',
    );
  }
}

async function fetchBill(
  ctx: Ctx,
  signal: AbortSignal,
  account: Account,
  biller: Biller,
  body: z.output<typeof fetchBody>,
): Promise<{ bill: FetchedBill; biller: Biller }> {
  const { store, settings, providers } = ctx;
  requireConsumer(biller, body.consumer_number);
  if (providers.bills.length === 0)
    throw new ApiError(503, 'no_provider', 'no bills provider is configured');
  const chain = await lookupBill(ctx, signal, biller, body.consumer_number);
  if (!chain.result) {
    const tried = chain.attempts.map((a) => `${a.provider}: ${a.message}`).join('; ');
    throw new ApiError(
      503,
      'providers_unavailable',
      `no biller provider could fetch the bill (${tried || 'none supports bill fetch'}); retry later`,
      null,
      null,
      { 'Retry-After': '30' },
    );
  }
  if (chain.result.outcome === 'not_found')
    throw notFound(`${biller.name}: ${chain.result.message}`, 'bill_not_found');
  const data = chain.result.data;
  const amount_micros = billAmount(chain.provider, data);
  const text = (value: unknown, max: number) =>
    typeof value === 'string' || typeof value === 'number' ? String(value).slice(0, max) : null;
  const provider = chain.provider;
  const bill = await store.transact((tx) => {
    const now_ms = tx.now.getTime();
    // Expired fetches are deleted by the pruning pass (payments/engine/prune.ts), not here.
    const fetched: FetchedBill = {
      id: newId('bill'),
      account_id: account.id,
      biller_id: biller.biller_id,
      consumer_number: body.consumer_number,
      customer_name: text(data.customer_name, 120) ?? '',
      amount_micros,
      due_date: text(data.due_date, 32),
      bill_date: text(data.bill_date, 32),
      bill_number: text(data.bill_number, 64),
      bill_period: text(data.bill_period, 32),
      provider,
      fetched_at: tx.now.toISOString(),
      expires_at: new Date(now_ms + settings.bills.fetch_ttl_ms).toISOString(),
      paid_txn_id: null,
    };
    tx.set('bill_fetches', fetched.id, fetched);
    return fetched;
  });
  return { bill, biller };
}

/** The bills providers in order until one answers; a shutdown is a 503 the client may retry. */
async function lookupBill(
  ctx: Ctx,
  signal: AbortSignal,
  biller: Biller,
  consumer_number: string,
): Promise<Awaited<ReturnType<typeof runLookupChain>>> {
  const { clock, providers } = ctx;
  try {
    return await runLookupChain(
      providers.bills,
      {
        service: 'bills',
        kind: 'bill',
        subject: consumer_number,
        params: { biller_id: biller.biller_id, category: biller.category },
      },
      { now: () => clock.now(), signal },
    );
  } catch (error) {
    if (error instanceof ChainAbortedError)
      throw new ApiError(503, 'shutting_down', 'the gateway is shutting down; retry shortly');
    throw error;
  }
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

async function payBill(
  ctx: Ctx,
  account: Account,
  biller: Biller,
  body: z.output<typeof payBody>,
  idempotency_key: string | null,
): Promise<Answer> {
  const { store, engine } = ctx;
  requireConsumer(biller, body.consumer_number);
  if (body.amount < biller.min_amount || body.amount > biller.max_amount) {
    throw badRequest(
      `amount: must be between ${microsToUnits(biller.min_amount)} and ${microsToUnits(biller.max_amount)} for ${biller.name}`,
      'amount',
      'amount_out_of_range',
    );
  }
  // The fetched bill, for the payment's details. Whether it may be paid is decided in the
  // payment's own transaction (`reserve` below), after the idempotency lookup: a retry of a
  // payment gets its first answer even once the bill has expired or been pruned.
  const bill_id = body.bill_id;
  let bill: FetchedBill | undefined;
  if (bill_id) {
    await store.readDurable();
    const found = store.get('bill_fetches', bill_id);
    if (found?.account_id === account.id) bill = found;
  }
  return engine.submit({
    account,
    service: 'bills',
    idempotency_key,
    client_ref: body.client_ref ?? null,
    request_hash: requestHash('bills-pay', {
      biller_id: biller.biller_id,
      consumer_number: body.consumer_number,
      amount_micros: body.amount,
      bill_id: bill_id ?? null,
      client_ref: body.client_ref ?? null,
      allow_duplicate: body.allow_duplicate ?? false,
    }),
    allow_duplicate: body.allow_duplicate ?? false,
    amount_micros: body.amount,
    charges_micros: biller.fee,
    ...billQuote(ctx, account, biller, body.amount),
    pay_to: 'provider:bills',
    subject: body.consumer_number,
    details: {
      kind: 'bill_payment',
      biller_id: biller.biller_id,
      biller: biller.name,
      category: biller.category,
      receipt_token: randomBytes(16).toString('hex'),
      ...(bill
        ? {
            bill_id: bill.id,
            customer_name: bill.customer_name,
            ...(bill.bill_number ? { bill_number: bill.bill_number } : {}),
            ...(bill.due_date ? { due_date: bill.due_date } : {}),
          }
        : {}),
    },
    provider_params: {
      biller_id: biller.biller_id,
      category: biller.category,
      ...(bill?.bill_number ? { bill_number: bill.bill_number } : {}),
    },
    reserve: bill_id
      ? (tx, txn_id) => reserveBill(ctx, tx, { account, biller, body, bill_id, txn_id })
      : undefined,
  });
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
    bill_id: string;
    txn_id: string;
  },
): void {
  const { account, biller, body, bill_id, txn_id } = claim;
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
  if (current.biller_id !== biller.biller_id || current.consumer_number !== body.consumer_number) {
    throw badRequest(
      `bill_id: bill ${current.id} is for ${current.biller_id} ${current.consumer_number}, not ${biller.biller_id} ${body.consumer_number}`,
      'bill_id',
      'bill_mismatch',
    );
  }
  if (biller.exact_amount && body.amount !== current.amount_micros) {
    throw new ApiError(
      422,
      'amount_mismatch',
      `amount: ${biller.name} takes the exact bill amount, ${microsToUnits(current.amount_micros)}`,
      'amount',
    );
  }
  const prior = current.paid_txn_id ? tx.get('payment_txns', current.paid_txn_id) : undefined;
  if (prior && prior.status !== 'failed')
    throw conflict(
      `bill ${bill_id} is already paid (${prior.id}, ${prior.status})`,
      'bill_already_paid',
      'bill_id',
    );
  tx.set('bill_fetches', bill_id, { ...current, paid_txn_id: txn_id });
}

/** 86400000 → "24 h", 90000 → "2 min", 1500 → "2 s". */
function duration(ms: number): string {
  if (ms >= 3_600_000) return `${Math.round(ms / 3_600_000)} h`;
  if (ms >= 60_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 1000)} s`;
}
