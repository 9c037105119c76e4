// Commission schemes, pure rules: a scheme is a list of slabs (service, operator, amount
// range, flat or percent, an optional cap); a transaction's commission comes from the first
// slab that names its operator, else the first that takes any operator, whose range holds the
// amount. A distributor's retailer earns by its own scheme; the distributor earns the
// difference between its scheme and the retailer's on the same transaction (the override).
// A distributor may give a retailer a scheme only when it pays, at every amount and
// operator, no more than the distributor's own (`marginBreach`).
import { microsToUnits } from '../../util/money.js';
import type { PaymentService } from '../../providers/types.js';

export interface CommissionSlab {
  /** Unique within its scheme; postings name `<scheme id>/<slab id>`. */
  id: string;
  service: PaymentService;
  /** Recharge: the operator_id; bills: the biller_id; DMT: IMPS or NEFT; PAN: the variant. null: any. */
  operator: string | null;
  /** The amount range, inclusive, in micro-units; max null: no upper bound. */
  min_micros: number;
  max_micros: number | null;
  kind: 'percent' | 'flat';
  /** Basis points of the amount (percent), or micro-units (flat). */
  value: number;
  /** The most a percent slab pays, in micro-units. */
  cap_micros: number | null;
}

export interface CommissionScheme {
  id: string;
  name: string;
  /** null: the admin's; else the distributor that made it (for its retailers). */
  owner_id: string | null;
  slabs: CommissionSlab[];
  created_at: string;
  updated_at: string;
}

export const DEFAULT_SCHEME_ID = 'default';

/** What a transaction is, as a scheme sees it. */
export interface Priced {
  service: PaymentService;
  operator: string;
  amount_micros: number;
}

export interface SlabMatch {
  /** `<scheme id>/<slab id>`, or null when no slab applies (no commission). */
  slab: string | null;
  gross_micros: number;
}

const PAISA = 10_000n;

/** A slab's commission for an amount: percent rounded down to the paisa, then capped; flat as it is. */
export function slabCommission(slab: CommissionSlab, amount_micros: number): number {
  if (slab.kind === 'flat') return slab.value;
  const exact = (BigInt(amount_micros) * BigInt(slab.value)) / 10_000n;
  const paid = Number(exact - (exact % PAISA));
  return slab.cap_micros === null ? paid : Math.min(paid, slab.cap_micros);
}

function inRange(slab: CommissionSlab, amount_micros: number): boolean {
  return (
    amount_micros >= slab.min_micros &&
    (slab.max_micros === null || amount_micros <= slab.max_micros)
  );
}

/** The slab a transaction earns by: one naming its operator first, else one for any operator. */
export function findSlab(scheme: CommissionScheme, priced: Priced): CommissionSlab | null {
  let any: CommissionSlab | null = null;
  for (const slab of scheme.slabs) {
    if (slab.service !== priced.service || !inRange(slab, priced.amount_micros)) continue;
    if (slab.operator === priced.operator) return slab;
    if (slab.operator === null) any ??= slab;
  }
  return any;
}

export function commissionOf(scheme: CommissionScheme, priced: Priced): SlabMatch {
  const slab = findSlab(scheme, priced);
  if (!slab) return { slab: null, gross_micros: 0 };
  return {
    slab: `${scheme.id}/${slab.id}`,
    gross_micros: slabCommission(slab, priced.amount_micros),
  };
}

/** Where a retailer's scheme pays more than its distributor's: the smallest such amount of one operator. */
export interface Breach {
  service: PaymentService;
  /** The operator; null: any operator neither scheme names (only "any operator" slabs reach it). */
  operator: string | null;
  amount_micros: number;
  retailer_micros: number;
  distributor_micros: number;
}

/**
 * Where a distributor's scheme pays less than a retailer's would (a sentence naming the
 * service, operator and amount), or null: `findBreach` in words.
 */
export function marginBreach(
  retailer: CommissionScheme,
  distributor: CommissionScheme,
): string | null {
  const breach = findBreach(retailer, distributor);
  if (!breach) return null;
  const { service, operator } = breach;
  return `${service}${operator === null ? '' : ` operator ${operator}`} at ${microsToUnits(breach.amount_micros)}: the retailer's scheme pays ${microsToUnits(breach.retailer_micros)}, the distributor's ${microsToUnits(breach.distributor_micros)}`;
}

/**
 * The first amount, for some service and operator, at which the retailer's scheme pays more
 * than the distributor's; null when there is none at any amount. Decided, not sampled:
 *
 * - Amounts are whole paise k ≥ 1 (every /api amount has at most 2 decimals), unbounded above.
 * - Operators: each one a slab of either scheme names, and one that neither names (which only
 *   "any operator" slabs reach). Every other operator is that one.
 * - For one service and operator, the slabs' bounds and the caps' kinks cut the amounts into
 *   pieces on which each scheme's commission has one form: a constant (no slab, a flat slab, a
 *   cap reached, 0 %) or floor(k·p / 10⁴) paise for a percent p in basis points. On a piece
 *   [L, R] (R possibly unbounded) the smallest breach is found exactly (`firstOnPiece`).
 *
 * The work is bounded by the slabs (pieces per operator) plus, per operator, at most 10⁴
 * amounts checked one by one where a higher rate meets a lower one below ₹100 (see `firstOnPiece`).
 */
export function findBreach(
  retailer: CommissionScheme,
  distributor: CommissionScheme,
): Breach | null {
  const services = [...new Set(retailer.slabs.map((s) => s.service))];
  for (const service of services) {
    const named = new Set<string>();
    for (const slab of [...retailer.slabs, ...distributor.slabs])
      if (slab.service === service && slab.operator !== null) named.add(slab.operator);
    for (const operator of [...named, null]) {
      const found = operatorBreach(retailer, distributor, service, operator);
      if (found) return found;
    }
  }
  return null;
}

/** `findBreach` for one service and operator (null: one neither scheme names). */
export function operatorBreach(
  retailer: CommissionScheme,
  distributor: CommissionScheme,
  service: PaymentService,
  operator: string | null,
): Breach | null {
  const reaches = (s: CommissionSlab) =>
    s.service === service && (s.operator === null || s.operator === operator);
  const own = retailer.slabs.filter(reaches);
  const theirs = distributor.slabs.filter(reaches);
  const found = firstBreach(own, theirs, operator);
  if (found === null) return null;
  return {
    service,
    operator,
    amount_micros: found * PAISA_MICROS,
    retailer_micros: valueAt(pick(own, operator, found), found),
    distributor_micros: valueAt(pick(theirs, operator, found), found),
  };
}

const PAISA_MICROS = 10_000;
/** Basis points in a whole: a commission is floor(k·bp / BP) paise of k paise. */
const BP = 10_000;

/** The slab `findSlab` takes for an amount of `paise`, among slabs of one service. */
function pick(
  slabs: CommissionSlab[],
  operator: string | null,
  paise: number,
): CommissionSlab | null {
  let any: CommissionSlab | null = null;
  const micros = paise * PAISA_MICROS;
  for (const slab of slabs) {
    if (!inRange(slab, micros)) continue;
    if (operator !== null && slab.operator === operator) return slab;
    if (slab.operator === null) any ??= slab;
  }
  return any;
}

function valueAt(slab: CommissionSlab | null, paise: number): number {
  return slab ? slabCommission(slab, paise * PAISA_MICROS) : 0;
}

/** Where a capped percent slab's commission reaches its cap and stays there: the first amount paying more than the cap. */
function capKink(slab: CommissionSlab): number | null {
  if (slab.kind !== 'percent' || slab.cap_micros === null || slab.value <= 0) return null;
  return ceilDiv((Math.floor(slab.cap_micros / PAISA_MICROS) + 1) * BP, slab.value);
}

/** A commission's form on a piece: constant micro-units, or floor(k·bp / 10⁴) paise. */
type Form = { micros: number } | { bp: number };

function formOf(slab: CommissionSlab | null, paise: number): Form {
  if (!slab || slab.kind === 'flat') return { micros: slab?.value ?? 0 };
  if (slab.value <= 0) return { micros: 0 };
  const kink = capKink(slab);
  if (kink !== null && paise >= kink) return { micros: slab.cap_micros! };
  return { bp: slab.value };
}

/** The smallest amount (paise) where the retailer's slabs pay more than the distributor's, for one operator. */
function firstBreach(
  own: CommissionSlab[],
  theirs: CommissionSlab[],
  operator: string | null,
): number | null {
  const cuts = new Set<number>([1]);
  for (const slab of [...own, ...theirs]) {
    cuts.add(ceilDiv(slab.min_micros, PAISA_MICROS));
    if (slab.max_micros !== null) cuts.add(Math.floor(slab.max_micros / PAISA_MICROS) + 1);
    const kink = capKink(slab);
    if (kink !== null) cuts.add(kink);
  }
  const starts = [...cuts].filter((k) => k >= 1).sort((a, b) => a - b);
  for (const [i, from] of starts.entries()) {
    const to = i + 1 < starts.length ? starts[i + 1]! - 1 : Infinity;
    const found = firstOnPiece(
      formOf(pick(own, operator, from), from),
      formOf(pick(theirs, operator, from), from),
      from,
      to,
    );
    if (found !== null) return found;
  }
  return null;
}

/**
 * The smallest k in [from, to] where `own(k) > theirs(k)`, both of one form on the piece.
 * Constants and floor(k·p/10⁴) are non-decreasing in k, so:
 * - constant a against constant b: a breach on the whole piece or nowhere;
 * - constant a against a percent: the percent is least at `from`;
 * - a percent against constant b: floor(k·p/10⁴)·10⁴ > b first at k = ⌈(⌊b/10⁴⌋ + 1)·10⁴ / p⌉;
 * - percent p1 against p2: p1 ≤ p2 gives floor(k·p1/10⁴) ≤ floor(k·p2/10⁴) at every k. For
 *   p1 > p2, once k·(p1 − p2) ≥ 10⁴ the exact values differ by a paisa or more, so their
 *   floors differ: a breach at every k ≥ T = ⌈10⁴ / (p1 − p2)⌉. Below T (T ≤ 10⁴ paise, ₹100)
 *   rounding may hide the difference, and the amounts there are checked one by one: exact,
 *   and at most 10⁴ checks per operator, since the pieces do not overlap.
 */
function firstOnPiece(own: Form, theirs: Form, from: number, to: number): number | null {
  const paid = (form: Form, k: number) =>
    'micros' in form ? form.micros : Math.floor((k * form.bp) / BP) * PAISA_MICROS;
  if ('micros' in own && 'micros' in theirs) return own.micros > theirs.micros ? from : null;
  if ('micros' in own) return own.micros > paid(theirs, from) ? from : null;
  if ('micros' in theirs) {
    const first = Math.max(
      from,
      ceilDiv((Math.floor(theirs.micros / PAISA_MICROS) + 1) * BP, own.bp),
    );
    return first <= to ? first : null;
  }
  if (own.bp <= theirs.bp) return null;
  const always = ceilDiv(BP, own.bp - theirs.bp);
  for (let k = from; k <= Math.min(to, always - 1); k++)
    if (paid(own, k) > paid(theirs, k)) return k;
  const first = Math.max(from, always);
  return first <= to ? first : null;
}

function ceilDiv(a: number, b: number): number {
  return Math.floor((a + b - 1) / b);
}
