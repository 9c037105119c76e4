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

/**
 * Where a distributor's scheme pays less than a retailer's would (a sentence naming the
 * service, operator and amount), or null. Both schemes are piecewise linear in the amount
 * between their slabs' bounds and caps, so comparing them at every bound, every cap's kink
 * and the paisa on each side of each is comparing them everywhere.
 */
export function marginBreach(
  retailer: CommissionScheme,
  distributor: CommissionScheme,
): string | null {
  const services = new Set(retailer.slabs.map((s) => s.service));
  for (const service of services) {
    const slabs = [...retailer.slabs, ...distributor.slabs].filter((s) => s.service === service);
    const operators = new Set<string>(['\u0000any']);
    for (const slab of slabs) if (slab.operator !== null) operators.add(slab.operator);
    const points = new Set<number>();
    for (const slab of slabs) {
      for (const bound of [slab.min_micros, slab.max_micros]) {
        if (bound === null) continue;
        for (const at of [bound - 10_000, bound, bound + 10_000]) if (at >= 0) points.add(at);
      }
      if (slab.kind === 'percent' && slab.cap_micros !== null && slab.value > 0) {
        const kink = Math.ceil((slab.cap_micros * 10_000) / slab.value);
        for (const at of [kink - 10_000, kink, kink + 10_000]) if (at >= 0) points.add(at);
      }
    }
    const highest = Math.max(0, ...points);
    points.add(highest * 2 + 1_000_000); // past every bound: the open-ended slabs
    for (const operator of operators) {
      for (const amount_micros of [...points].sort((a, b) => a - b)) {
        const priced = { service, operator, amount_micros };
        const own = commissionOf(retailer, priced).gross_micros;
        const parent = commissionOf(distributor, priced).gross_micros;
        if (own > parent)
          return `${service}${operator === '\u0000any' ? '' : ` operator ${operator}`} at ${microsToUnits(amount_micros)}: the retailer's scheme pays ${microsToUnits(own)}, the distributor's ${microsToUnits(parent)}`;
      }
    }
  }
  return null;
}
