// Bill payment: the biller catalogue, bill fetch (a lookup through the providers' failover
// chain; no money moves), payment (a payment of the one engine, with the biller's fee as
// charges and its commission), and the receipt of each payment as HTML or PDF.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { Router } from 'express';
import { jsonBody } from '../kernel/body.js';
import { ApiError, badRequest, conflict, notFound, parseWith } from '../http/errors.js';
import { ChainAbortedError, runLookupChain } from '../providers/chain.js';
import { newId } from '../util/ids.js';
import { type AmountError, microsToUnits, unitsToMicros } from '../util/money.js';
import { authorize } from './auth.js';
import type { Biller } from './config.js';
import type { PaymentsContext } from './context.js';
import { billView, billerView, receiptUrl } from './bills-views.js';
import { billersQuery, fetchBody, payBody, receiptQuery } from './schemas.js';
import { commissionMicros, idempotencyKey, requestHash } from './intent.js';
import { receiptHtml, receiptPdf } from './receipt.js';
import { billFetchExpired, type FetchedBill, } from './tables.js';

const MAX_BILL_MICROS = 10_000_000 * 1_000_000;

function sameToken(given: string, expected: unknown): boolean {
  if (typeof expected !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function billsRouter(ctx: PaymentsContext): Router {
  const { store, logger, settings, engine, config, clock, providers } = ctx;
  const router = Router();
  const billers = new Map(settings.bills.billers.map((b) => [b.biller_id, b]));
  const shutdown = new AbortController();
  ctx.onStop(() => shutdown.abort());

  const requireBiller = (biller_id: string): Biller => {
    const biller = billers.get(biller_id);
    if (!biller) throw badRequest(`biller_id: no biller ${biller_id}; GET /api/bills/billers lists them`, 'biller_id', 'unknown_biller');
    return biller;
  };
  const requireConsumer = (biller: Biller, consumer_number: string) => {
    if (!new RegExp(biller.consumer_pattern).test(consumer_number)) {
      throw badRequest(`consumer_number: not a valid ${biller.consumer_label} for ${biller.name}`, 'consumer_number', 'invalid_consumer_number');
    }
  };

  router.get('/bills/billers', (req, res) => {
    authorize(store.state, req, res, logger);
    const query = parseWith(billersQuery, req.query);
    res.json({ status: true, data: settings.bills.billers.filter((b) => !query.category || b.category === query.category).map(billerView) });
  });

  router.post('/bills/fetch', jsonBody(config), async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'bills');
    const body = parseWith(fetchBody, req.body ?? {});
    const biller = requireBiller(body.biller_id);
    requireConsumer(biller, body.consumer_number);
    if (providers.bills.length === 0) throw new ApiError(503, 'no_provider', 'no bills provider is configured');
    let chain: Awaited<ReturnType<typeof runLookupChain>>;
    try {
      chain = await runLookupChain(
        providers.bills,
        { service: 'bills', kind: 'bill', subject: body.consumer_number, params: { biller_id: biller.biller_id, category: biller.category } },
        { now: () => clock.now(), signal: shutdown.signal },
      );
    } catch (error) {
      if (error instanceof ChainAbortedError) throw new ApiError(503, 'shutting_down', 'the gateway is shutting down; retry shortly');
      throw error;
    }
    if (!chain.result) {
      const tried = chain.attempts.map((a) => `${a.provider}: ${a.message}`).join('; ');
      throw new ApiError(503, 'providers_unavailable', `no biller provider could fetch the bill (${tried || 'none supports bill fetch'}); retry later`, null, null, { 'Retry-After': '30' });
    }
    if (chain.result.outcome === 'not_found') throw notFound(`${biller.name}: ${chain.result.message}`, 'bill_not_found');
    const data = chain.result.data;
    let amount_micros: number;
    try {
      amount_micros = unitsToMicros(typeof data.amount === 'string' ? Number(data.amount) : (data.amount ?? Number.NaN), 2);
    } catch (error) {
      throw new ApiError(502, 'bad_provider_answer', `${chain.provider} gave a bill amount that is not an amount (${(error as AmountError).message})`);
    }
    if (amount_micros <= 0 || amount_micros > MAX_BILL_MICROS) throw new ApiError(502, 'bad_provider_answer', `${chain.provider} gave a bill amount out of range`);
    const text = (value: unknown, max: number) => (typeof value === 'string' || typeof value === 'number' ? String(value).slice(0, max) : null);
    const provider = chain.provider;
    const bill = await store.transact((tx) => {
      const now_ms = tx.now.getTime();
      // Expired fetches are deleted by the pruning pass (payments/prune.ts), not here.
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
    res.json({ status: true, data: billView(bill, biller) });
  });

  router.post('/bills/pay', jsonBody(config), async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'bills');
    const body = parseWith(payBody, req.body ?? {});
    const biller = requireBiller(body.biller_id);
    requireConsumer(biller, body.consumer_number);
    if (body.amount < biller.min_amount || body.amount > biller.max_amount) {
      throw badRequest(`amount: must be between ${microsToUnits(biller.min_amount)} and ${microsToUnits(biller.max_amount)} for ${biller.name}`, 'amount', 'amount_out_of_range');
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
    const answer = await engine.submit({
      account,
      service: 'bills',
      idempotency_key: idempotencyKey(req, body.client_ref),
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
      commission_micros: commissionMicros(body.amount, biller.commission_pct),
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
      provider_params: { biller_id: biller.biller_id, category: biller.category, ...(bill?.bill_number ? { bill_number: bill.bill_number } : {}) },
      reserve: bill_id
        ? (tx, txn_id) => {
            const current = tx.get('bill_fetches', bill_id);
            if (!current || current.account_id !== account.id) {
              throw notFound(`no fetched bill ${bill_id} (a bill can be paid by id for ${duration(settings.bills.fetch_ttl_ms)} after its fetch; fetch it again)`, 'bill_not_found');
            }
            if (billFetchExpired(current, tx.now.getTime())) throw new ApiError(422, 'bill_expired', `bill ${bill_id} has expired; fetch it again`, 'bill_id');
            if (current.biller_id !== biller.biller_id || current.consumer_number !== body.consumer_number) {
              throw badRequest(`bill_id: bill ${current.id} is for ${current.biller_id} ${current.consumer_number}, not ${biller.biller_id} ${body.consumer_number}`, 'bill_id', 'bill_mismatch');
            }
            if (biller.exact_amount && body.amount !== current.amount_micros) {
              throw new ApiError(422, 'amount_mismatch', `amount: ${biller.name} takes the exact bill amount, ${microsToUnits(current.amount_micros)}`, 'amount');
            }
            const prior = current.paid_txn_id ? tx.get('payment_txns', current.paid_txn_id) : undefined;
            if (prior && prior.status !== 'failed') throw conflict(`bill ${bill_id} is already paid (${prior.id}, ${prior.status})`, 'bill_already_paid', 'bill_id');
            tx.set('bill_fetches', bill_id, { ...current, paid_txn_id: txn_id });
          }
        : undefined,
    });
    res.locals.txn_id = (answer.body as { txn_id?: string }).txn_id;
    res.status(answer.http_status).json(answer.body);
  });

  router.get('/bills/receipt/:txn_id', async (req, res) => {
    const query = parseWith(receiptQuery, req.query);
    const txn_id = String(req.params.txn_id).slice(0, 64);
    await store.readDurable();
    const txn = store.get('payment_txns', txn_id);
    if (query.token !== undefined) {
      if (txn?.service !== 'bills' || !sameToken(query.token, txn.details.receipt_token)) throw notFound(`no receipt ${txn_id}`, 'receipt_not_found');
    } else {
      const { account } = authorize(store.state, req, res, logger);
      if (txn?.service !== 'bills' || txn.account_id !== account.id) throw notFound(`no bill payment ${txn_id}`, 'receipt_not_found');
    }
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (query.format === 'pdf') {
      const pdf = receiptPdf(txn, config.currency);
      res.setHeader('Content-Type', 'application/pdf');
      res.setHeader('Content-Disposition', `inline; filename="receipt-${txn.id}.pdf"`);
      res.send(pdf);
      return;
    }
    const pdf_url = `${receiptUrl(ctx.public_url(), txn)}&format=pdf`;
    res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    res.type('html').send(receiptHtml(txn, config.currency, pdf_url));
  });

  return router;
}

/** 86400000 → "24 h", 90000 → "2 min", 1500 → "2 s". */
function duration(ms: number): string {
  if (ms >= 3_600_000) return `${Math.round(ms / 3_600_000)} h`;
  if (ms >= 60_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 1000)} s`;
}
