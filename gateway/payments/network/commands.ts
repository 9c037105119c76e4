// The distribution network's rules, as commands (the /api and /admin routes validate, call
// one, present):
// - schemes: the admin's (any rates) and a distributor's own (never above the distributor's
//   scheme at any amount or operator: `marginBreach`), created and replaced whole;
// - an account's place (admin): a distributor needs approved eKYC and has no distributor
//   itself (one level: distributor → retailers); a retailer's distributor must be one; an
//   account with retailers stays a distributor;
// - a distributor onboards a retailer (a new account with its first key, under it; eKYC and
//   the admin's activation as for anyone), gives it a scheme within its margin, and funds its
//   wallet from its own: two postings in one commit, once per reference.
import type { z } from 'zod';
import { createApiKey, requireAccount } from '../../accounts/accounts.js';
import { createPaymentsAccount } from '../accounts.js';
import { hashPassword } from '../../accounts/password.js';
import { ApiError, badRequest, conflict, notFound } from '../../http/errors.js';
import { InsufficientBalanceError, transferWallet } from '../../ledger/ledger.js';
import type { Account } from '../../store/state.js';
import type { Store, Tx } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import { microsToUnits } from '../../util/money.js';
import type { Audit } from '../logs.js';
import type { PaymentsContext } from '../context.js';
import { DEFAULT_SCHEME_ID, marginBreach, type CommissionScheme } from './schemes.js';
import type { fundBody, networkBody, retailerBody, schemeBody } from './schemas.js';
import type { NetworkMember } from './tables.js';
import { createHash } from 'node:crypto';

type Ctx = Pick<PaymentsContext, 'store' | 'pricing'>;

/** A member row as it is, or the implicit one of an account outside the network. */
export function memberOf(tx: Pick<Tx, 'get'>, account_id: string): NetworkMember {
  return (
    tx.get('network', account_id) ?? {
      account_id,
      role: 'retailer',
      parent_id: null,
      scheme_id: null,
      created_at: new Date(0).toISOString(),
      updated_at: new Date(0).toISOString(),
    }
  );
}

/** A distributor's own member row, or 403 for any other account. */
export function requireDistributor(tx: Pick<Tx, 'get'>, account_id: string): NetworkMember {
  const member = memberOf(tx, account_id);
  if (member.role !== 'distributor')
    throw new ApiError(
      403,
      'not_a_distributor',
      'this account is not a distributor; an administrator makes an account a distributor',
    );
  return member;
}

/** One of `distributor_id`'s retailers, or 404 (another's retailer is not found, not forbidden). */
export function requireRetailerOf(
  tx: Pick<Tx, 'get'>,
  distributor_id: string,
  retailer_id: string,
): NetworkMember {
  const member = tx.get('network', retailer_id);
  if (!member || member.parent_id !== distributor_id)
    throw notFound(`no retailer ${retailer_id} of this distributor`, 'retailer_not_found');
  return member;
}

function requireScheme(tx: Pick<Tx, 'get'>, ctx: Ctx, scheme_id: string): CommissionScheme {
  if (scheme_id === DEFAULT_SCHEME_ID) return ctx.pricing.default_scheme;
  const scheme = tx.get('commission_schemes', scheme_id);
  if (!scheme) throw notFound(`no commission scheme ${scheme_id}`, 'scheme_not_found');
  return scheme;
}

/** 409 naming where a retailer's scheme would pay more than its distributor's. */
function requireWithinMargin(
  tx: Pick<Tx, 'get'>,
  ctx: Ctx,
  scheme: CommissionScheme,
  distributor_id: string,
): void {
  const breach = marginBreach(scheme, ctx.pricing.schemeOf(tx, distributor_id));
  if (breach)
    throw conflict(
      `scheme ${scheme.name} pays more than this distributor's own scheme: ${breach}`,
      'scheme_above_margin',
      'slabs',
    );
}

type SchemeBody = z.output<typeof schemeBody>;

/**
 * Schemes a distributor may own: each is a row of the live document (up to 500 slabs), so a
 * distributor creating schemes in a loop must not grow it without end (issue #26: every table
 * says what bounds it). Replacing a scheme is always possible.
 */
export const MAX_SCHEMES_PER_DISTRIBUTOR = 100;

/** A new scheme: the admin's (owner null) or a distributor's own (within its margin). */
export function createScheme(
  ctx: Ctx,
  owner_id: string | null,
  body: SchemeBody,
  audit?: Audit,
): Promise<CommissionScheme> {
  // Outside the transaction: the index is built once, then kept in step with every commit.
  const by_owner = ctx.store.indexBy('commission_schemes', 'owner_id');
  return ctx.store.transact((tx) => {
    if (owner_id !== null && by_owner.ids(owner_id).size >= MAX_SCHEMES_PER_DISTRIBUTOR)
      throw conflict(
        `a distributor can own at most ${MAX_SCHEMES_PER_DISTRIBUTOR} commission schemes; replace one instead`,
        'too_many_schemes',
        'name',
      );
    const at = tx.now.toISOString();
    const scheme: CommissionScheme = {
      id: newId('sch'),
      name: body.name,
      owner_id,
      slabs: body.slabs,
      created_at: at,
      updated_at: at,
    };
    if (owner_id !== null) {
      requireDistributor(tx, owner_id);
      requireWithinMargin(tx, ctx, scheme, owner_id);
    }
    tx.set('commission_schemes', scheme.id, scheme);
    audit?.(tx, { action: 'scheme.create', account_id: null, details: { scheme_id: scheme.id } });
    return scheme;
  });
}

/** Replaces a scheme's name and slabs; a distributor replaces only its own, within its margin. */
export function replaceScheme(
  ctx: Ctx,
  owner_id: string | null,
  scheme_id: string,
  body: SchemeBody,
  audit?: Audit,
): Promise<CommissionScheme> {
  return ctx.store.transact((tx) => {
    const current = tx.get('commission_schemes', scheme_id);
    if (!current || (owner_id !== null && current.owner_id !== owner_id))
      throw notFound(`no commission scheme ${scheme_id}`, 'scheme_not_found');
    const next: CommissionScheme = {
      ...current,
      name: body.name,
      slabs: body.slabs,
      updated_at: tx.now.toISOString(),
    };
    if (current.owner_id !== null) requireWithinMargin(tx, ctx, next, current.owner_id);
    tx.set('commission_schemes', scheme_id, next);
    audit?.(tx, { action: 'scheme.replace', account_id: null, details: { scheme_id } });
    return next;
  });
}

/**
 * The admin places an account: its role, its distributor, its scheme (any scheme: the admin
 * is not held to a distributor's margin; an override below zero is simply not paid).
 */
export function setMember(
  ctx: Ctx & { retailers: RetailerIndex },
  account_id: string,
  body: z.output<typeof networkBody>,
  audit: Audit,
): Promise<NetworkMember> {
  return ctx.store.transact((tx) => {
    const account = requireAccount(tx, account_id);
    const current = memberOf(tx, account_id);
    const next: NetworkMember = {
      ...current,
      role: body.role ?? current.role,
      parent_id: body.parent_id === undefined ? current.parent_id : body.parent_id,
      scheme_id: body.scheme_id === undefined ? current.scheme_id : body.scheme_id,
      created_at: tx.get('network', account_id)?.created_at ?? tx.now.toISOString(),
      updated_at: tx.now.toISOString(),
    };
    if (next.role === 'distributor') {
      if (account.kyc_status !== 'approved')
        throw conflict(
          `account ${account_id} has no approved eKYC; a distributor must have one`,
          'kyc_not_approved',
          'role',
        );
      if (next.parent_id !== null)
        throw badRequest(
          'parent_id: a distributor has no distributor of its own (one level: distributor → retailers)',
          'parent_id',
        );
    } else if (ctx.retailers.count(account_id) > 0) {
      throw conflict(
        `account ${account_id} has retailers; move them first`,
        'has_retailers',
        'role',
      );
    }
    if (next.parent_id !== null) {
      if (next.parent_id === account_id)
        throw badRequest('parent_id: an account is not its own distributor', 'parent_id');
      if (memberOf(tx, next.parent_id).role !== 'distributor')
        throw badRequest(`parent_id: ${next.parent_id} is not a distributor`, 'parent_id');
    }
    if (next.scheme_id !== null) requireScheme(tx, ctx, next.scheme_id);
    tx.set('network', account_id, next);
    audit(tx, { action: 'network.set', account_id });
    return next;
  });
}

/** The retailers of each distributor, from the store's index of network rows by parent. */
export interface RetailerIndex {
  count(distributor_id: string): number;
  ids(distributor_id: string): Iterable<string>;
}

export function retailerIndex(store: Store): RetailerIndex {
  const index = store.indexBy('network', 'parent_id', { in_transactions: true });
  return {
    count: (id) => index.ids(id).size,
    ids: (id) => index.ids(id),
  };
}

/** A distributor onboards a retailer: a new account and its first key, under the distributor. */
export async function onboardRetailer(
  ctx: Ctx & Pick<PaymentsContext, 'services'>,
  distributor: Account,
  body: z.output<typeof retailerBody>,
): Promise<{ account: Account; key: ReturnType<typeof createApiKey> }> {
  requireDistributor(ctx.store, distributor.id);
  const password_hash = await hashPassword(body.password);
  const id = newId('acc'); // drawn once: every run of the transaction reads the same keys
  return ctx.store.transact((tx) => {
    requireDistributor(tx, distributor.id);
    const { email, name } = body;
    const account = createPaymentsAccount(tx, ctx.services, { id, email, name, password_hash });
    const key = createApiKey(tx, ctx.store.indexBy('keys', 'account_id'), account.id, 'default');
    const at = tx.now.toISOString();
    tx.set('network', account.id, {
      account_id: account.id,
      role: 'retailer',
      parent_id: distributor.id,
      scheme_id: null,
      created_at: at,
      updated_at: at,
    });
    return { account, key };
  });
}

/** A distributor gives one of its retailers a scheme (its own, or the default), within its margin. */
export function assignScheme(
  ctx: Ctx,
  distributor: Account,
  retailer_id: string,
  scheme_id: string | null,
): Promise<NetworkMember> {
  return ctx.store.transact((tx) => {
    requireDistributor(tx, distributor.id);
    const member = requireRetailerOf(tx, distributor.id, retailer_id);
    const scheme = requireScheme(tx, ctx, scheme_id ?? DEFAULT_SCHEME_ID);
    if (scheme.owner_id !== null && scheme.owner_id !== distributor.id)
      throw notFound(`no commission scheme ${scheme.id}`, 'scheme_not_found');
    if (scheme.owner_id === null && scheme.id !== DEFAULT_SCHEME_ID)
      throw new ApiError(
        403,
        'scheme_not_yours',
        `scheme ${scheme.id} is the administrator's; give your retailers your own schemes`,
        'scheme_id',
      );
    requireWithinMargin(tx, ctx, scheme, distributor.id);
    const next = { ...member, scheme_id, updated_at: tx.now.toISOString() };
    tx.set('network', retailer_id, next);
    return next;
  });
}

/**
 * A distributor moves money from its wallet into a retailer's: two postings in one commit,
 * once per reference (the same reference again moves nothing and answers the same; with
 * another retailer or amount, 409).
 */
export function fundRetailer(
  ctx: Ctx,
  distributor: Account,
  body: z.output<typeof fundBody>,
): Promise<{ duplicate: boolean; posting_ids: string[] }> {
  return ctx.store.transact((tx) => {
    requireDistributor(tx, distributor.id);
    requireRetailerOf(tx, distributor.id, body.retailer_id);
    const key = `network-fund:${distributor.id}:${body.reference}`;
    const request_hash = createHash('sha256')
      .update(`${body.retailer_id}:${body.amount}`)
      .digest('hex');
    const seen = tx.get('idempotency', key);
    if (seen) {
      if (seen.request_hash !== request_hash)
        throw conflict(
          `reference ${body.reference} was used already for another transfer`,
          'reference_conflict',
          'reference',
        );
      return { duplicate: true, posting_ids: (seen.body as { posting_ids: string[] }).posting_ids };
    }
    let moved: ReturnType<typeof transferWallet>;
    try {
      moved = transferWallet(tx, {
        from_account_id: distributor.id,
        to_account_id: body.retailer_id,
        amount_micros: body.amount,
        memo_from: `funds to retailer ${body.retailer_id} (${body.reference})`,
        memo_to: `funds from distributor ${distributor.id} (${body.reference})`,
        ref: body.reference,
      });
    } catch (error) {
      if (error instanceof InsufficientBalanceError)
        throw new ApiError(
          402,
          'insufficient_balance',
          `wallet balance ${microsToUnits(error.balance_micros)} is lower than the ${microsToUnits(error.required_micros)} to move`,
        );
      throw error;
    }
    const posting_ids = [moved.debit.id, moved.credit.id];
    tx.set('idempotency', key, {
      key,
      request_hash,
      status: 200,
      body: { posting_ids },
      created_at: tx.now.toISOString(),
    });
    return { duplicate: false, posting_ids };
  });
}
