// The distribution network over HTTP. /api (a distributor's key): its place and scheme, its
// own schemes, its retailers (onboard, list, give a scheme, fund, see their transactions).
// /admin: every scheme, and an account's place (role, distributor, scheme). Each route
// validates, calls one command of network/commands.ts and presents.
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { requireAccount } from '../../accounts/accounts.js';
import { jsonBody } from '../../http/body.js';
import { notFound, parseWith } from '../../http/errors.js';
import { balanceMicros } from '../../ledger/ledger.js';
import { microsToUnits } from '../../util/money.js';
import { auditInTx, type Audit } from '../logs.js';
import { authorize } from '../auth.js';
import type { PaymentsContext } from '../context.js';
import { txnView } from '../engine/transactions.js';
import { selectTransactions, transactionsQuery } from '../engine/txn-filter.js';
import {
  assignScheme,
  createScheme,
  fundRetailer,
  memberOf,
  onboardRetailer,
  replaceScheme,
  requireDistributor,
  requireRetailerOf,
  retailerIndex,
  setMember,
  type RetailerIndex,
} from './commands.js';
import {
  accountIdParam,
  assignBody,
  fundBody,
  networkBody,
  retailerBody,
  retailersQuery,
  schemeBody,
  schemeIdParam,
} from './schemas.js';
import { memberView, retailerView, schemeView } from './views.js';

const schemeParams = z.object({ scheme_id: schemeIdParam });
const accountParams = z.object({ account_id: accountIdParam });
const adminAccountParams = z.object({ id: accountIdParam });
const schemesQuery = retailersQuery;

/** A page of one distributor's retailers, in the order they joined. */
function retailerPage(
  ctx: PaymentsContext,
  retailers: RetailerIndex,
  distributor_id: string,
  page: { page: number; limit: number },
) {
  const { store } = ctx;
  const ids = [...retailers.ids(distributor_id)];
  const start = (page.page - 1) * page.limit;
  const rows = ids.slice(start, start + page.limit).map((id) => {
    const account = requireAccount(store, id);
    return retailerView(store.state, account, memberOf(store, id));
  });
  return { total: ids.length, page: page.page, limit: page.limit, retailers: rows };
}

export function networkRouter(ctx: PaymentsContext): {
  api: Router;
  admin: Router;
  retailers: RetailerIndex;
} {
  const retailers = retailerIndex(ctx.store);
  const by_owner = ctx.store.indexBy('commission_schemes', 'owner_id', { in_transactions: true });
  return {
    api: apiRoutes(ctx, retailers, by_owner),
    admin: adminRoutes(ctx, retailers),
    retailers,
  };
}

/** The calling distributor's account (403 for any other). */
function distributorOf(ctx: PaymentsContext, req: Request, res: Response) {
  const { account } = authorize(ctx.store.state, req, res, ctx.logger);
  requireDistributor(ctx.store, account.id);
  return account;
}

type SchemeIndex = ReturnType<PaymentsContext['store']['indexBy']>;

function apiRoutes(ctx: PaymentsContext, retailers: RetailerIndex, by_owner: SchemeIndex): Router {
  const { store, logger } = ctx;
  const router = Router();

  router.get('/network', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    await store.readDurable();
    const member = memberOf(store, account.id);
    res.json({
      status: true,
      data: {
        ...memberView(member, retailers.count(account.id)),
        scheme: schemeView(ctx.pricing.schemeOf(store, account.id)),
      },
    });
  });

  distributorSchemeRoutes(ctx, router, by_owner);
  retailerRoutes(ctx, router, retailers);
  retailerTransactionRoutes(ctx, router);
  return router;
}

function retailerRoutes(ctx: PaymentsContext, router: Router, retailers: RetailerIndex): void {
  const { store } = ctx;
  const json = jsonBody(ctx.config);
  const distributor = (req: Request, res: Response) => distributorOf(ctx, req, res);
  router.post('/network/retailers', json, async (req, res) => {
    const account = distributor(req, res);
    const body = parseWith(retailerBody, req.body ?? {});
    const created = await onboardRetailer(ctx, account, body);
    res.status(201).json({
      status: true,
      message:
        'retailer registered under this distributor; it submits eKYC with its own key (POST /api/kyc) and an administrator activates its services',
      data: {
        account_id: created.account.id,
        api_key: created.key.key,
        key_prefix: created.key.record.prefix,
        parent_id: account.id,
        services: created.account.services,
        kyc_status: created.account.kyc_status,
      },
    });
  });

  router.get('/network/retailers', async (req, res) => {
    const account = distributor(req, res);
    const query = parseWith(retailersQuery, req.query);
    await store.readDurable();
    res.json({ status: true, data: retailerPage(ctx, retailers, account.id, query) });
  });

  router.put('/network/retailers/:account_id/scheme', json, async (req, res) => {
    const account = distributor(req, res);
    const { account_id } = parseWith(accountParams, req.params);
    const body = parseWith(assignBody, req.body ?? {});
    const member = await assignScheme(ctx, account, account_id, body.scheme_id);
    res.json({ status: true, data: memberView(member, 0) });
  });

  router.post('/network/funds', json, async (req, res) => {
    const account = distributor(req, res);
    const body = parseWith(fundBody, req.body ?? {});
    const moved = await fundRetailer(ctx, account, body);
    res.json({
      status: true,
      message: moved.duplicate
        ? `reference ${body.reference} was moved already; nothing moved again`
        : `${microsToUnits(body.amount)} moved to retailer ${body.retailer_id}`,
      data: {
        retailer_id: body.retailer_id,
        amount: microsToUnits(body.amount),
        reference: body.reference,
        duplicate: moved.duplicate,
        posting_ids: moved.posting_ids,
        balance: microsToUnits(balanceMicros(store.state, account.id)),
        retailer_balance: microsToUnits(balanceMicros(store.state, body.retailer_id)),
      },
    });
  });
}

/** A distributor sees its retailers' transactions, each with the override it earned on it. */
function retailerTransactionRoutes(ctx: PaymentsContext, router: Router): void {
  const { store } = ctx;
  const distributor = (req: Request, res: Response) => distributorOf(ctx, req, res);
  router.get('/network/retailers/:account_id/transactions', async (req, res) => {
    const account = distributor(req, res);
    const { account_id } = parseWith(accountParams, req.params);
    const query = parseWith(transactionsQuery, req.query);
    await store.readDurable();
    requireRetailerOf(store, account.id, account_id);
    const { total, rows } = await selectTransactions(store, query, account_id, {
      offset: (query.page - 1) * query.limit,
      limit: query.limit,
    });
    res.json({
      status: true,
      data: {
        total,
        page: query.page,
        limit: query.limit,
        transactions: rows.map((t) => ({
          ...txnView(t),
          override:
            t.status === 'success' && t.override?.account_id === account.id
              ? microsToUnits(t.override.gross_micros)
              : 0,
        })),
      },
    });
  });
}

function distributorSchemeRoutes(
  ctx: PaymentsContext,
  router: Router,
  by_owner: SchemeIndex,
): void {
  const { store } = ctx;
  const json = jsonBody(ctx.config);
  const distributor = (req: Request, res: Response) => distributorOf(ctx, req, res);
  router.get('/network/schemes', async (req, res) => {
    const account = distributor(req, res);
    const query = parseWith(schemesQuery, req.query);
    await store.readDurable();
    const ids = [...by_owner.ids(account.id)];
    const start = (query.page - 1) * query.limit;
    const rows = ids
      .slice(start, start + query.limit)
      .map((id) => schemeView(store.get('commission_schemes', id)!));
    res.json({ status: true, data: { total: ids.length, page: query.page, schemes: rows } });
  });

  router.post('/network/schemes', json, async (req, res) => {
    const account = distributor(req, res);
    const body = parseWith(schemeBody, req.body ?? {});
    const scheme = await createScheme(ctx, account.id, body);
    res.status(201).json({ status: true, data: schemeView(scheme) });
  });

  router.put('/network/schemes/:scheme_id', json, async (req, res) => {
    const account = distributor(req, res);
    const { scheme_id } = parseWith(schemeParams, req.params);
    const body = parseWith(schemeBody, req.body ?? {});
    const scheme = await replaceScheme(ctx, account.id, scheme_id, body);
    res.json({ status: true, data: schemeView(scheme) });
  });
}

function adminRoutes(ctx: PaymentsContext, retailers: RetailerIndex): Router {
  const { store } = ctx;
  const router = Router();
  const auditOf =
    (req: Request, res: Response): Audit =>
    (tx, entry) =>
      auditInTx(tx, req, res, entry);

  router.get('/schemes', async (req, res) => {
    const query = parseWith(schemesQuery, req.query);
    const [rows, total] = await Promise.all([
      store.page('commission_schemes', {
        offset: (query.page - 1) * query.limit,
        limit: query.limit,
      }),
      store.count('commission_schemes'),
    ]);
    res.json({
      object: 'list',
      total: total + 1,
      page: query.page,
      limit: query.limit,
      default: schemeView(ctx.pricing.default_scheme),
      data: rows.map(schemeView),
    });
  });

  router.get('/schemes/:scheme_id', async (req, res) => {
    const { scheme_id } = parseWith(schemeParams, req.params);
    await store.readDurable();
    const scheme =
      scheme_id === 'default'
        ? ctx.pricing.default_scheme
        : store.get('commission_schemes', scheme_id);
    if (!scheme) throw notFound(`no commission scheme ${scheme_id}`, 'scheme_not_found');
    res.json(schemeView(scheme));
  });

  router.post('/schemes', async (req, res) => {
    const body = parseWith(schemeBody, req.body ?? {});
    const scheme = await createScheme(ctx, null, body, auditOf(req, res));
    res.status(201).json(schemeView(scheme));
  });

  router.put('/schemes/:scheme_id', async (req, res) => {
    const { scheme_id } = parseWith(schemeParams, req.params);
    const body = parseWith(schemeBody, req.body ?? {});
    const scheme = await replaceScheme(ctx, null, scheme_id, body, auditOf(req, res));
    res.json(schemeView(scheme));
  });

  adminAccountRoutes(ctx, router, retailers, auditOf);
  return router;
}

function adminAccountRoutes(
  ctx: PaymentsContext,
  router: Router,
  retailers: RetailerIndex,
  auditOf: (req: Request, res: Response) => Audit,
): void {
  const { store } = ctx;
  router.get('/accounts/:id/network', async (req, res) => {
    const { id } = parseWith(adminAccountParams, req.params);
    const query = parseWith(retailersQuery, req.query);
    await store.readDurable();
    requireAccount(store, id);
    const member = memberOf(store, id);
    res.json({
      ...memberView(member, retailers.count(id)),
      scheme: schemeView(ctx.pricing.schemeOf(store, id)),
      ...(member.role === 'distributor'
        ? { retailers: retailerPage(ctx, retailers, id, query) }
        : {}),
    });
  });

  router.put('/accounts/:id/network', async (req, res) => {
    const { id } = parseWith(adminAccountParams, req.params);
    const body = parseWith(networkBody, req.body ?? {});
    const member = await setMember({ ...ctx, retailers }, id, body, auditOf(req, res));
    res.json(memberView(member, retailers.count(id)));
  });
}
